"""Fixtures for the hybridstore ceph-volume module's tests: every process
ceph-volume would run is recorded and answered here, as ceph-volume's own
tests do it (no device, no cluster, no root needed)."""
import json
import os
import sys
from typing import Any, Dict, List, Optional

import pytest


def pytest_configure(config):
    config.addinivalue_line('markers', 'real_require: tool.require is not stubbed')

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..')))


class FakeProcess(object):
    """Stands for ceph_volume.process.call/run: records each command and
    answers from `labels` (hybridstore-tool show-label) and `rc` (by the
    command's first words)."""

    def __init__(self) -> None:
        self.calls: List[List[str]] = []
        self.labels: Dict[str, Dict[str, Any]] = {}
        self.rc: Dict[str, int] = {}
        self.stdin: List[Optional[str]] = []

    def _rc(self, command: List[str]) -> int:
        for n in (3, 2, 1):
            key = ' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(command[:n]))
            if key in self.rc:
                return self.rc[key]
        return 0

    def call(self, command, **kw):
        command = list(command)
        self.calls.append(command)
        self.stdin.append(kw.get('stdin'))
        if os.path.basename(command[0]) == 'hybridstore-tool' and command[1:2] == ['show-label']:
            dev = command[command.index('--dev') + 1]
            if dev in self.labels:
                return json.dumps({dev: self.labels[dev]}, indent=2).splitlines(), [], 0
            return json.dumps({dev: {'state': 'unreadable'}}).splitlines(), ['no label'], 1
        if os.path.basename(command[0]) == 'ceph-authtool' and '--gen-print-key' in command:
            return ['AQBfakefakefakefakefakefakefakefakefake=='], [], 0
        rc = self._rc(command)
        return [], (['failed'] if rc else []), rc

    def run(self, command, **kw):
        _, _, rc = self.call(command, **kw)
        if rc:
            raise RuntimeError('command returned non-zero exit status: %s' % rc)

    def commands(self, *words: str) -> List[List[str]]:
        """The recorded commands that start with WORDS (the program by basename)."""
        out = []
        for c in self.calls:
            head = [os.path.basename(c[0])] + c[1:len(words)]
            if head == list(words):
                out.append(c)
        return out


def label(fsid: str, role: str, meta: Optional[Dict[str, str]] = None, done: bool = True,
          tiers=('ssd', 'hdd'), size: int = 1 << 30) -> Dict[str, Any]:
    """A label as `hybridstore-tool show-label` prints it."""
    d: Dict[str, Any] = {'fsid': fsid, 'role': role, 'record_version': 2, 'state': 'intact',
                         'flags': (['mkfs_done'] if done else []) + (['kv_on_device'] if role == 'ssd' else []),
                         'meta': dict(meta or {}), 'size': size, 'device_size': size}
    if role == 'ssd':
        d['tiers'] = [{'tier': t} for t in tiers]
    return d


@pytest.fixture(autouse=True)
def tool_installed(monkeypatch, request):
    """hybridstore-tool counts as installed (its calls are answered by
    fake_process), except for the tests of tool.require itself."""
    if 'real_require' not in request.keywords:
        monkeypatch.setattr('ceph_volume_hybridstore.tool.require', lambda: '/usr/bin/hybridstore-tool')


@pytest.fixture
def fake_process(monkeypatch):
    fp = FakeProcess()
    monkeypatch.setattr('ceph_volume.process.call', fp.call)
    monkeypatch.setattr('ceph_volume.process.run', fp.run)
    return fp


@pytest.fixture
def root(monkeypatch):
    monkeypatch.setattr('os.getuid', lambda: 0)


@pytest.fixture
def devices(tmp_path):
    """Two files standing for the SSD (1 GiB) and the HDD (4 GiB)."""
    ssd, hdd = tmp_path / 'ssd', tmp_path / 'hdd'
    with open(ssd, 'wb') as f:
        f.truncate(1 << 30)
    with open(hdd, 'wb') as f:
        f.truncate(4 << 30)
    return str(ssd), str(hdd)


@pytest.fixture
def no_bluestore(monkeypatch):
    monkeypatch.setattr('ceph_volume.util.disk.has_bluestore_label', lambda p: False)


@pytest.fixture
def ceph_conf(monkeypatch):
    from ceph_volume import conf

    class Conf(object):
        def get(self, section, key):
            assert (section, key) == ('global', 'fsid')
            return 'c1c1c1c1-0000-0000-0000-000000000001'
    monkeypatch.setattr(conf, 'ceph', Conf(), raising=False)
    monkeypatch.setattr(conf, 'cluster', 'ceph')


@pytest.fixture
def osd_setup(monkeypatch):
    """prepare_utils and system calls that would touch the host, recorded."""
    seen: Dict[str, List[Any]] = {'create_id': [], 'create_osd_path': [], 'get_monmap': [], 'write_keyring': [],
                                  'chown': [], 'mounted': []}
    from ceph_volume.util import prepare as prepare_utils

    def create_id(fsid, secrets, osd_id=None):
        seen['create_id'].append((fsid, json.loads(secrets), osd_id))
        return osd_id or '7'
    monkeypatch.setattr(prepare_utils, 'create_id', create_id)
    monkeypatch.setattr(prepare_utils, 'create_osd_path',
                        lambda osd_id, tmpfs=False: seen['create_osd_path'].append((osd_id, tmpfs)))
    monkeypatch.setattr(prepare_utils, 'get_monmap', lambda osd_id: seen['get_monmap'].append(osd_id))
    monkeypatch.setattr(prepare_utils, 'write_keyring',
                        lambda osd_id, secret, **kw: seen['write_keyring'].append((osd_id, secret)))
    monkeypatch.setattr('ceph_volume.util.system.chown', lambda p, recursive=True: seen['chown'].append(p))
    monkeypatch.setattr('ceph_volume.util.system.path_is_mounted', lambda p, destination=None: p in seen['mounted'])
    return seen
