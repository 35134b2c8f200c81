"""What is refused before anything is changed: no OSD id is taken, no
directory made, no device written until the devices pass these checks."""
import errno
import logging
import os
import stat
from typing import Optional

from ceph_volume.util import disk

from . import tool

logger = logging.getLogger(__name__)


class Refused(RuntimeError):
    """Bad input: nothing was changed."""


def device_size(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def human(n: int) -> str:
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if n < 1024 or unit == 'TiB':
            return ('%d %s' % (n, unit)) if unit == 'B' else ('%.1f %s' % (n, unit))
        n /= 1024.0
    return str(n)


def check_exists(path: str, what: str) -> None:
    if not os.path.exists(path):
        raise Refused('%s %s does not exist' % (what, path))


def check_not_in_use(path: str, what: str) -> None:
    """A block device another holder has open exclusively (a mounted file
    system, device-mapper, md, a running OSD's BlueStore) cannot be opened
    with O_EXCL."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise Refused('%s %s: %s' % (what, path, e.strerror))
    if not stat.S_ISBLK(st.st_mode):
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL)
    except OSError as e:
        if e.errno == errno.EBUSY:
            raise Refused('%s %s is in use (mounted, or held by device-mapper, md or another process)'
                          % (what, path))
        raise Refused('%s %s cannot be opened: %s' % (what, path, e.strerror))
    os.close(fd)


def check_no_store(path: str, what: str) -> None:
    """A device that carries a HybridStore or BlueStore label is some OSD's
    (or was): it must be zapped first, by the operator."""
    label = tool.show_label(path)
    if label is not None:
        owner = ' of osd.%s' % label.osd_id if label.osd_id is not None else ''
        state = '' if label.committed else ' (an unfinished mkfs)'
        raise Refused('%s %s already holds a hybridstore %s label of store %s%s%s; '
                      'zap it first (ceph-volume lvm zap --destroy %s)'
                      % (what, path, label.role or '?', label.fsid, owner, state, path))
    if disk.has_bluestore_label(path):
        raise Refused('%s %s holds a BlueStore label; zap it first (ceph-volume lvm zap --destroy %s)'
                      % (what, path, path))


def check_pair(ssd: Optional[str], hdd: Optional[str], command: str = 'prepare') -> None:
    """The SSD and the HDD of a new OSD, or Refused with the reason."""
    if not hdd:
        raise Refused('%s --objectstore hybridstore needs --data HDD (the capacity tier)' % command)
    if not ssd:
        raise Refused('%s --objectstore hybridstore needs --block.ssd SSD (the fast tier, which also holds '
                      'RocksDB and the commit journal); --data %s is the HDD' % (command, hdd))
    check_exists(hdd, '--data')
    check_exists(ssd, '--block.ssd')
    tool.require()
    if os.path.realpath(ssd) == os.path.realpath(hdd):
        raise Refused('--block.ssd and --data are the same device (%s): a hybridstore OSD needs two'
                      % os.path.realpath(hdd))
    check_not_in_use(hdd, '--data')
    check_not_in_use(ssd, '--block.ssd')
    check_no_store(hdd, '--data')
    check_no_store(ssd, '--block.ssd')
    ssd_size, hdd_size = device_size(ssd), device_size(hdd)
    if ssd_size > hdd_size:
        raise Refused('--block.ssd %s (%s) is larger than --data %s (%s): --data is the capacity tier (the HDD), '
                      '--block.ssd the fast one; were they swapped?'
                      % (ssd, human(ssd_size), hdd, human(hdd_size)))
    logger.info('hybridstore devices: ssd %s (%s), hdd %s (%s)', ssd, human(ssd_size), hdd, human(hdd_size))
