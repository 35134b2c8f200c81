"""hybridstore-tool as ceph-volume calls it: read labels, set a label key,
prime a data directory, zap devices.

Every call goes through ceph_volume.process (logged to ceph-volume's log, as
its calls of ceph-bluestore-tool are), except that a label is never written
to the log: the SSD label carries the OSD's secret (`osd_key`).
"""
import json
import logging
import os
import shutil
from typing import Any, Dict, List, Optional

from ceph_volume import process

logger = logging.getLogger(__name__)

# The tool's path; hybridstore-tools installs it as /usr/bin/hybridstore-tool.
TOOL_ENV = 'CEPH_VOLUME_HYBRIDSTORE_TOOL'

# Tiers a store may have, fastest first (the tool's tier names).
TIERS = ('ssd', 'tier2', 'tier3', 'hdd')


def tool() -> str:
    return os.environ.get(TOOL_ENV, 'hybridstore-tool')


def require() -> str:
    """The tool's path, or RuntimeError saying how to get one."""
    path = shutil.which(tool())
    if not path:
        raise RuntimeError('%s not found: install hybridstore-tools, or set %s to its path'
                           % (tool(), TOOL_ENV))
    return path


class Label(object):
    """One device's label, as `hybridstore-tool show-label --dev DEV` prints it."""

    def __init__(self, device: str, data: Dict[str, Any]) -> None:
        self.device = device
        self.data = data

    @property
    def fsid(self) -> str:
        return self.data.get('fsid', '')

    @property
    def role(self) -> str:
        return self.data.get('role', '')

    @property
    def flags(self) -> List[str]:
        return list(self.data.get('flags', []))

    @property
    def meta(self) -> Dict[str, str]:
        return dict(self.data.get('meta', {}))

    @property
    def committed(self) -> bool:
        """A store's mkfs finished on it (or a version-1 label, which only a
        finished mkfs wrote)."""
        return 'mkfs_done' in self.flags or self.data.get('record_version', 0) == 1

    @property
    def osd_id(self) -> Optional[str]:
        return self.meta.get('whoami')

    @property
    def ceph_fsid(self) -> Optional[str]:
        return self.meta.get('ceph_fsid')

    @property
    def tiers(self) -> List[str]:
        return [t.get('tier', '') for t in self.data.get('tiers', [])]

    def __repr__(self) -> str:
        return '<Label %s %s %s>' % (self.device, self.role, self.fsid)


def show_label(device: str) -> Optional[Label]:
    """The device's HybridStore label, or None when it has none that can be
    read (no label, too small, unreadable, not a device)."""
    out, err, rc = process.call([tool(), 'show-label', '--dev', device],
                                verbose_on_failure=False,
                                terminal_verbose=False,
                                logfile_verbose=False)
    try:
        report = json.loads(''.join(out))
    except ValueError:
        logger.debug('hybridstore-tool show-label --dev %s: no JSON (rc %s): %s', device, rc, ' '.join(err))
        return None
    data = report.get(device) if isinstance(report, dict) else None
    if not data or not data.get('fsid') or data.get('state') == 'unreadable':
        return None
    return Label(device, data)


def set_label_key(device: str, key: str, value: str) -> None:
    """Sets meta KEY in DEVICE's label (the value is not logged)."""
    _, err, rc = process.call([tool(), 'set-label-key', '--dev', device, '-k', key, '-v', value],
                              obfuscate='-v', terminal_verbose=False)
    if rc:
        raise RuntimeError('hybridstore-tool set-label-key %s on %s failed: %s' % (key, device, ' '.join(err)))


def prime_osd_dir(path: str, devices: List[str]) -> None:
    """`hybridstore-tool --path PATH prime-osd-dir --dev SSD --dev ...`: the
    data directory made again from the labels (the SSD first)."""
    command = [tool(), '--path', path, 'prime-osd-dir']
    for d in devices:
        command += ['--dev', d]
    _, err, rc = process.call(command, terminal_verbose=True, show_command=True)
    if rc:
        raise RuntimeError('hybridstore-tool prime-osd-dir of %s failed (exit %s): %s' % (path, rc, ' '.join(err)))


def zap(devices: List[str]) -> None:
    """`hybridstore-tool zap --dev D...`: both label copies and the kvfs
    superblocks zeroed on every device, or on none when one is in use."""
    if not devices:
        return
    command = [tool(), 'zap']
    for d in devices:
        command += ['--dev', d]
    _, err, rc = process.call(command, terminal_verbose=True, show_command=True)
    if rc:
        raise RuntimeError('hybridstore-tool zap of %s failed (exit %s), nothing zapped: %s'
                           % (', '.join(devices), rc, ' '.join(err)))
