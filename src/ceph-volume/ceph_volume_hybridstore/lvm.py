"""The hybridstore object store of `ceph-volume lvm`: the HDD (`--data`) and
the SSD (`--block.ssd`) as logical volumes, tagged as BlueStore's are.

Both LVs carry ceph-volume's tags (`ceph.osd_id`, `ceph.osd_fsid`,
`ceph.cluster_fsid`, `ceph.block_device`, `ceph.objectstore=hybridstore`,
...); the HDD's LV is `ceph.type=block`, the SSD's `ceph.type=ssd`, and
`ceph.ssd_device` / `ceph.ssd_uuid` name the SSD's LV as `ceph.db_device` /
`ceph.db_uuid` name BlueStore's block.db. A device given instead of an LV
gets a VG and an LV made on it (`--data-size`/`--data-slots`,
`--block.ssd-size`/`--block.ssd-slots`), as for BlueStore.

Activation primes a tmpfs data directory from the labels
(`hybridstore-tool prime-osd-dir --dev SSD_LV --dev HDD_LV`) and, unless
`--no-systemd`, enables and starts the units as for BlueStore.
"""
import logging
import os
from typing import Any, Dict, List, Optional, TYPE_CHECKING

from ceph_volume import conf, configuration, decorators, terminal
from ceph_volume.api import lvm as api
from ceph_volume.devices.lvm.common import rollback_osd
from ceph_volume.devices.lvm.listing import direct_report
from ceph_volume.objectstore.lvm import Lvm
from ceph_volume.systemd import systemctl
from ceph_volume.util import prepare as prepare_utils
from ceph_volume.util import system

from . import checks, common, tool

if TYPE_CHECKING:
    import argparse

logger = logging.getLogger(__name__)

SSD_TYPE = 'ssd'


def is_hybridstore_lv(lv: Any) -> bool:
    return lv.tags.get('ceph.objectstore') == common.OBJECTSTORE


class HybridLvm(Lvm):
    def __init__(self, args: "argparse.Namespace") -> None:
        super().__init__(args)
        self.objectstore = common.OBJECTSTORE
        self.ssd_device_path: str = ''
        # set by lvm batch, whose plan checked every device first
        self.checked = False

    # --- prepare --------------------------------------------------------------

    def _existing_lv(self, name: str) -> Optional[api.Volume]:
        return self._get_existing_lv(name) if name and name.count('/') == 1 and not name.startswith('/') else None

    def _check_one(self, name: str, what: str) -> str:
        """The path of NAME (an LV as vg/lv, or a device) after its checks."""
        lv = self._existing_lv(name)
        if lv is not None:
            if lv.tags.get('ceph.osd_id') not in (None, ''):
                raise checks.Refused('%s %s already belongs to osd.%s (%s); zap it first (ceph-volume lvm zap %s)'
                                     % (what, name, lv.tags['ceph.osd_id'],
                                        lv.tags.get('ceph.objectstore', 'bluestore'), name))
            path = lv.lv_path
        else:
            path = name
            checks.check_exists(path, what)
            checks.check_not_in_use(path, what)
        checks.check_no_store(path, what)
        return path

    def check(self) -> None:
        if getattr(self.args, 'dmcrypt', False):
            raise checks.Refused('--dmcrypt is not supported with --objectstore hybridstore')
        if self.checked:
            return
        data, ssd = getattr(self.args, 'data', None), getattr(self.args, 'block_ssd', None)
        if not ssd:
            raise checks.Refused('ceph-volume lvm prepare --objectstore hybridstore needs --block.ssd SSD (an LV as '
                                 'vg/lv, or a device; the fast tier); --data %s is the HDD' % data)
        tool.require()
        hdd_path = self._check_one(data, '--data')
        ssd_path = self._check_one(ssd, '--block.ssd')
        if os.path.realpath(hdd_path) == os.path.realpath(ssd_path):
            raise checks.Refused('--block.ssd and --data are the same device (%s)' % os.path.realpath(hdd_path))
        ssd_size, hdd_size = checks.device_size(ssd_path), checks.device_size(hdd_path)
        # sizes asked for on a device to be made into an LV (0: all of it)
        hdd_want = int(getattr(self.args, 'data_size', 0) or 0)
        ssd_want = int(getattr(self.args, 'block_ssd_size', 0) or 0)
        if self._existing_lv(data) is None and hdd_want:
            hdd_size = min(hdd_size, hdd_want)
        if self._existing_lv(ssd) is None and ssd_want:
            ssd_size = min(ssd_size, ssd_want)
        if ssd_size > hdd_size:
            raise checks.Refused('--block.ssd %s (%s) is larger than --data %s (%s): --data is the capacity tier '
                                 '(the HDD), --block.ssd the fast one; were they swapped?'
                                 % (ssd, checks.human(ssd_size), data, checks.human(hdd_size)))

    def safe_prepare(self, args: Optional["argparse.Namespace"] = None) -> None:
        if args is not None:
            self.args = args
        self.check()
        try:
            self.prepare()
        except Exception:
            logger.exception('lvm prepare (hybridstore) was unable to complete')
            logger.info('will rollback OSD ID creation')
            rollback_osd(self.osd_id)
            raise
        terminal.success('ceph-volume lvm prepare successful for: %s (hdd), %s (ssd)'
                         % (self.args.data, self.args.block_ssd))

    @decorators.needs_root
    def prepare(self) -> None:
        self.pre_prepare()          # osd new, the tags, the HDD's LV
        self.setup_ssd_device()
        self.tags['ceph.type'] = 'block'
        if self.block_lv is not None:
            self.block_lv.set_tags(self.tags)
        self.prepare_osd_req()
        self.osd_mkfs()
        common.store_label_meta(self.ssd_device_path, self.osd_id, self.tags['ceph.cluster_fsid'],
                                self.cephx_secret)

    def setup_ssd_device(self) -> None:
        name = self.args.block_ssd
        tags = self._prepare_tags(SSD_TYPE, name)
        lv = self._get_existing_lv(name)
        if lv:
            self._apply_tags_to_existing_lv(lv, SSD_TYPE, tags)
            path = lv.lv_path
        else:
            path = self._handle_physical_device(name, SSD_TYPE, getattr(self.args, 'block_ssd_size', 0),
                                                getattr(self.args, 'block_ssd_slots', 1), tags)
            if path is None:
                raise RuntimeError('Invalid device: %s' % name)
        self.ssd_device_path = path
        self.tags['ceph.ssd_device'] = path

    def prepare_osd_req(self, tmpfs: bool = True) -> None:
        # as BlueStore's, without the `block` link: mkfs links block.ssd and
        # block.hdd itself
        prepare_utils.create_osd_path(self.osd_id, tmpfs=tmpfs)
        prepare_utils.get_monmap(self.osd_id)
        prepare_utils.write_keyring(self.osd_id, self.cephx_secret)

    def add_objectstore_opts(self) -> None:
        system.chown(self.ssd_device_path)
        system.chown(self.block_device_path)
        self.osd_mkfs_cmd.extend(common.mkfs_device_options(self.ssd_device_path, self.block_device_path))
        if self.get_osdspec_affinity():
            self.osd_mkfs_cmd.extend(['--osdspec-affinity', self.get_osdspec_affinity()])

    # --- activate -------------------------------------------------------------

    def _activate(self, osd_lvs: List[api.Volume], no_systemd: bool = False, no_tmpfs: bool = False) -> None:
        block = next((lv for lv in osd_lvs if lv.tags.get('ceph.type') == 'block'), None)
        if block is None:
            raise RuntimeError('could not find the HDD (ceph.type=block) LV of a hybridstore OSD to activate')
        if not is_hybridstore_lv(block):
            raise RuntimeError('%s is a %s OSD, not hybridstore' % (block.lv_path,
                                                                    block.tags.get('ceph.objectstore', 'bluestore')))
        ssd = next((lv for lv in osd_lvs if lv.tags.get('ceph.type') == SSD_TYPE), None)
        ssd_path = ssd.lv_path if ssd is not None else block.tags.get('ceph.ssd_device', '')
        if not ssd_path:
            raise RuntimeError('osd.%s: no SSD LV (ceph.type=ssd) and no ceph.ssd_device tag'
                               % block.tags.get('ceph.osd_id'))
        osd_id = block.tags['ceph.osd_id']
        osd_fsid = block.tags['ceph.osd_fsid']
        conf.cluster = block.tags.get('ceph.cluster_name', conf.cluster)
        configuration.load_ceph_conf_path(conf.cluster)
        configuration.load()
        path = common.mount_data_dir(osd_id, tmpfs=not no_tmpfs)
        common.prime(path, [ssd_path, block.lv_path])
        if not no_systemd:
            systemctl.enable_volume(osd_id, osd_fsid, 'lvm')
            systemctl.enable_osd(osd_id)
            systemctl.start_osd(osd_id)
        terminal.success('ceph-volume lvm activate successful for osd ID: %s (hybridstore)' % osd_id)

    @decorators.needs_root
    def activate_all(self) -> None:
        osds = hybridstore_osds()
        if not osds:
            terminal.warning('Was unable to find any hybridstore OSDs to activate')
            terminal.warning('Verify OSDs are present with "ceph-volume lvm list"')
            return
        for osd_fsid, osd_id in osds.items():
            if not self.args.no_systemd and systemctl.osd_is_active(osd_id):
                terminal.warning('OSD ID %s FSID %s process is active. Skipping activation' % (osd_id, osd_fsid))
                continue
            terminal.info('Activating OSD ID %s FSID %s' % (osd_id, osd_fsid))
            self.activate(self.args, osd_id=osd_id, osd_fsid=osd_fsid)


def lvm_osds() -> Dict[str, Dict[str, Any]]:
    """Every LVM OSD: {osd_fsid: {'osd_id': ..., 'objectstore': ...}}."""
    result: Dict[str, Dict[str, Any]] = {}
    for osd_id, devices in direct_report().items():
        for device in devices:
            tags = device.get('tags', {})
            if tags.get('ceph.type') == 'block' and tags.get('ceph.osd_fsid'):
                result[tags['ceph.osd_fsid']] = {'osd_id': osd_id,
                                                 'objectstore': tags.get('ceph.objectstore', 'bluestore')}
    return result


def hybridstore_osds() -> Dict[str, str]:
    """{osd_fsid: osd_id} of the hybridstore LVM OSDs."""
    return {f: o['osd_id'] for f, o in lvm_osds().items() if o['objectstore'] == common.OBJECTSTORE}
