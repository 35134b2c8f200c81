"""lvm batch --objectstore hybridstore (batch.py): the plan, its checks, and
one HybridLvm per HDD with the SSD split in slots. LVM is mocked."""
import argparse
import json

import pytest

from ceph_volume_hybridstore import batch, checks
from conftest import label


def test_plan_one_ssd():
    assert batch.plan(['/dev/b', '/dev/c', '/dev/d'], ['/dev/n']) == [
        {'data': '/dev/b', 'block_ssd': '/dev/n', 'slots': 3},
        {'data': '/dev/c', 'block_ssd': '/dev/n', 'slots': 3},
        {'data': '/dev/d', 'block_ssd': '/dev/n', 'slots': 3}]


def test_plan_uneven():
    got = batch.plan(['/dev/b', '/dev/c', '/dev/d'], ['/dev/n0', '/dev/n1'])
    assert [(o['data'], o['block_ssd'], o['slots']) for o in got] == [
        ('/dev/b', '/dev/n0', 2), ('/dev/c', '/dev/n0', 2), ('/dev/d', '/dev/n1', 1)]


def test_plan_needs_ssds_and_hdds():
    with pytest.raises(checks.Refused, match='needs --ssd-devices'):
        batch.plan(['/dev/b'], [])
    with pytest.raises(checks.Refused, match='needs HDD devices'):
        batch.plan([], ['/dev/n'])


@pytest.fixture
def disks(tmp_path):
    made = {}
    for name, size in (('n', 2 << 30), ('b', 4 << 30), ('c', 4 << 30), ('tiny', 64 << 20)):
        p = tmp_path / name
        with open(p, 'wb') as f:
            f.truncate(size)
        made[name] = str(p)
    return made


class TestCheckPlan(object):
    def test_good(self, fake_process, no_bluestore, disks):
        batch.check_plan(batch.plan([disks['b'], disks['c']], [disks['n']]))

    def test_share_larger_than_hdd(self, fake_process, no_bluestore, disks):
        with pytest.raises(checks.Refused, match='is larger than the HDD'):
            batch.check_plan(batch.plan([disks['tiny']], [disks['n']]))

    def test_share_too_small(self, fake_process, no_bluestore, disks):
        with pytest.raises(checks.Refused, match='too small for RocksDB'):
            batch.check_plan(batch.plan([disks['b'], disks['c']], [disks['tiny']]))

    def test_device_twice(self, fake_process, no_bluestore, disks):
        with pytest.raises(checks.Refused, match='named twice'):
            batch.check_plan(batch.plan([disks['b'], disks['n']], [disks['n']]))

    def test_labelled(self, fake_process, no_bluestore, disks):
        fake_process.labels[disks['c']] = label('1' * 8 + '-0000-0000-0000-' + '0' * 12, 'hdd')
        with pytest.raises(checks.Refused, match='already holds a hybridstore hdd label'):
            batch.check_plan(batch.plan([disks['b'], disks['c']], [disks['n']]))


def bargs(**kw):
    base = dict(devices=[], ssd_devices=[], objectstore='hybridstore', report=False, yes=True, format='pretty',
                crush_device_class='', no_systemd=True, prepare=False)
    base.update(kw)
    return argparse.Namespace(**base)


class TestRun(object):
    def test_report_changes_nothing(self, fake_process, no_bluestore, disks, capsys, monkeypatch):
        made = []
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.safe_prepare', lambda self, a=None: made.append(a))
        batch.run(bargs(devices=[disks['b'], disks['c']], ssd_devices=[disks['n']], report=True, format='json'))
        out = json.loads(capsys.readouterr().out)
        assert [o['ssd_slots'] for o in out] == [2, 2] and made == []

    def test_without_yes_nothing_is_made(self, fake_process, no_bluestore, disks, monkeypatch):
        made = []
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.safe_prepare', lambda self, a=None: made.append(a))
        with pytest.raises(SystemExit, match='pass --yes'):
            batch.run(bargs(devices=[disks['b']], ssd_devices=[disks['n']], yes=False))
        assert made == []

    def test_refusal_makes_nothing(self, fake_process, no_bluestore, disks, monkeypatch):
        made = []
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.safe_prepare', lambda self, a=None: made.append(a))
        with pytest.raises(checks.Refused):
            batch.run(bargs(devices=[disks['tiny']], ssd_devices=[disks['n']]))
        assert made == []

    def test_one_osd_per_hdd_ssd_in_slots(self, fake_process, no_bluestore, disks, monkeypatch):
        made = []

        def prepare(self, a=None):
            assert self.checked
            made.append((a.data, a.block_ssd, a.block_ssd_slots))
            self.osd_id = str(len(made))
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.safe_prepare', prepare)
        activated = []
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.activate', lambda self, *a, **kw: activated.append(self.osd_id))
        batch.run(bargs(devices=[disks['b'], disks['c']], ssd_devices=[disks['n']]))
        assert made == [(disks['b'], disks['n'], 2), (disks['c'], disks['n'], 2)]
        assert activated == ['1', '2']

    def test_prepare_only(self, fake_process, no_bluestore, disks, monkeypatch):
        activated = []
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.safe_prepare', lambda self, a=None: None)
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.activate', lambda self, *a, **kw: activated.append(1))
        batch.run(bargs(devices=[disks['b']], ssd_devices=[disks['n']], prepare=True))
        assert activated == []

    def test_failed_activation_rolls_back(self, fake_process, no_bluestore, disks, monkeypatch):
        rolled = []
        monkeypatch.setattr('ceph_volume.devices.lvm.common.rollback_osd', lambda osd_id: rolled.append(osd_id))

        def prepare(self, a=None):
            self.osd_id = '4'
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.safe_prepare', prepare)

        def boom(self, *a, **kw):
            raise RuntimeError('no unit')
        monkeypatch.setattr('ceph_volume_hybridstore.lvm.HybridLvm.activate', boom)
        with pytest.raises(RuntimeError, match='no unit'):
            batch.run(bargs(devices=[disks['b']], ssd_devices=[disks['n']]))
        assert rolled == ['4']
