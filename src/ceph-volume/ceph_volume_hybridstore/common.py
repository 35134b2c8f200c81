"""What the raw and LVM hybridstore object stores share: the mkfs options
that name the two devices, the label keys written after mkfs, priming a
data directory, and undoing a prepare that failed."""
import logging
import os
from typing import Dict, List, Optional

from ceph_volume import conf, process, terminal
from ceph_volume.util import prepare as prepare_utils
from ceph_volume.util import system

from . import tool

logger = logging.getLogger(__name__)

OBJECTSTORE = 'hybridstore'
# Links in a hybridstore data directory (mkfs and prime-osd-dir make them).
DEVICE_LINKS = ('block.ssd', 'block.tier2', 'block.tier3', 'block.hdd')


def osd_path(osd_id: str) -> str:
    return '/var/lib/ceph/osd/%s-%s' % (conf.cluster, osd_id)


def mkfs_device_options(ssd: str, hdd: str) -> List[str]:
    """How ceph-osd --mkfs is told its devices: the hybridstore_*_path
    options (docs/ceph.md, "Configuring an OSD"). mkfs links block.ssd and
    block.hdd in the data directory to them and records them in the SSD
    label as path hints; later starts use the links prime-osd-dir makes."""
    return ['--hybridstore-ssd-path', ssd, '--hybridstore-hdd-path', hdd]


def store_label_meta(ssd: str, osd_id: str, cluster_fsid: str, secret: str) -> None:
    """After mkfs: the SSD label must hold what activate rebuilds the data
    directory from (`whoami`, `ceph_fsid`, and `osd_key`, which becomes the
    keyring). ceph-osd --mkfs writes them there through the adapter's
    write_meta; any that is missing or differs is set here."""
    label = tool.show_label(ssd)
    if label is None or not label.committed:
        raise RuntimeError('ceph-osd --mkfs left no finished hybridstore label on %s' % ssd)
    want: Dict[str, str] = {'whoami': str(osd_id), 'ceph_fsid': cluster_fsid, 'osd_key': secret}
    meta = label.meta
    for key, value in want.items():
        if meta.get(key) != value:
            logger.info('setting %s in the ssd label of %s (mkfs left %s)', key, ssd,
                        'it out' if key not in meta else 'another value')
            tool.set_label_key(ssd, key, value)


def prime(path: str, devices: List[str]) -> None:
    """The data directory PATH made from the devices' labels: the device
    links removed first (prime-osd-dir makes them again from the devices as
    found now), then chowned to ceph."""
    for link in DEVICE_LINKS:
        p = os.path.join(path, link)
        if os.path.islink(p):
            os.unlink(p)
    system.chown(path)
    tool.prime_osd_dir(path, devices)
    for d in devices:
        system.chown(d)
    system.chown(path)


def mount_data_dir(osd_id: str, tmpfs: bool) -> str:
    path = osd_path(osd_id)
    if not system.path_is_mounted(path):
        prepare_utils.create_osd_path(osd_id, tmpfs=tmpfs)
    return path


def purge_new(osd_id: Optional[str]) -> None:
    """Gives back an OSD id `ceph osd new` took for a prepare that failed
    (`osd purge-new`, which the bootstrap-osd key may do)."""
    if not osd_id:
        return
    terminal.error('Was unable to complete a new hybridstore OSD, will roll back osd.%s' % osd_id)
    keyring = '/var/lib/ceph/bootstrap-osd/%s.keyring' % conf.cluster
    _, err, rc = process.call(['ceph', '--cluster', conf.cluster, '--name', 'client.bootstrap-osd',
                               '--keyring', keyring, 'osd', 'purge-new', 'osd.%s' % osd_id,
                               '--yes-i-really-mean-it'], terminal_verbose=True)
    if rc:
        terminal.error('osd purge-new osd.%s failed: %s' % (osd_id, ' '.join(err)))


def undo_devices(devices: List[str]) -> None:
    """The labels a failed mkfs may have left, zapped. Only called for devices
    that carried no label when the prepare began (checks.check_pair)."""
    written = [d for d in devices if d and tool.show_label(d) is not None]
    if not written:
        return
    try:
        tool.zap(written)
    except RuntimeError as e:
        terminal.error(str(e))


def umount_data_dir(path: str) -> None:
    if path and system.path_is_mounted(path):
        system.unmount_tmpfs(path)
