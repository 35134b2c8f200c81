"""The hybridstore object store of `ceph-volume raw`: an OSD on two whole
devices (or partitions) that keeps all it needs in the devices' labels.

prepare:  checks (nothing changed on a refusal), `ceph osd new`, a tmpfs data
          directory, the monmap and keyring, `ceph-osd --mkfs --osd-objectstore
          hybridstore --hybridstore-ssd-path SSD --hybridstore-hdd-path HDD`
          (which writes whoami, ceph_fsid and the key into the SSD label), the
          label checked and completed. On a failure after `osd new`, the id is
          purged again and the labels mkfs wrote are zapped.
activate: the OSDs found by their labels (by id, fsid, devices, or all), each
          data directory a tmpfs primed with `hybridstore-tool prime-osd-dir`.
          As for BlueStore in raw mode, no systemd unit is made or started.
"""
import json
import logging
from typing import Any, Dict, List, Optional, TYPE_CHECKING

from ceph_volume import conf, decorators, terminal
from ceph_volume.objectstore.baseobjectstore import BaseObjectStore
from ceph_volume.util import prepare as prepare_utils
from ceph_volume.util import system

from . import checks, common, report, tool

if TYPE_CHECKING:
    import argparse

logger = logging.getLogger(__name__)


class HybridRaw(BaseObjectStore):
    def __init__(self, args: "argparse.Namespace") -> None:
        super().__init__(args)
        self.method = 'raw'
        self.objectstore = common.OBJECTSTORE
        self.devices: List[str] = list(getattr(args, 'devices', None) or [])
        self.osd_id = getattr(args, 'osd_id', None) or ''
        self.osd_fsid = getattr(args, 'osd_fsid', None) or ''
        self.block_device_path = getattr(args, 'data', None) or ''
        self.ssd_device_path: str = getattr(args, 'block_ssd', None) or ''
        self.created_osd_dir = False

    # --- prepare --------------------------------------------------------------

    def check(self) -> None:
        if getattr(self.args, 'dmcrypt', False):
            raise checks.Refused('--dmcrypt is not supported with --objectstore hybridstore')
        checks.check_pair(self.ssd_device_path, self.block_device_path, 'ceph-volume raw prepare')

    def safe_prepare(self, args: Optional["argparse.Namespace"] = None) -> None:
        if args is not None:
            self.args = args
        self.check()
        try:
            self.prepare()
        except Exception:
            logger.exception('raw prepare (hybridstore) was unable to complete')
            self.rollback()
            raise
        terminal.success('ceph-volume raw prepare successful for: %s (hdd), %s (ssd)'
                         % (self.block_device_path, self.ssd_device_path))

    def rollback(self) -> None:
        common.purge_new(self.osd_id)
        common.undo_devices([self.ssd_device_path, self.block_device_path])
        if self.created_osd_dir:
            common.umount_data_dir(self.osd_path.rstrip('/'))

    @decorators.needs_root
    def prepare(self) -> None:
        self.osd_fsid = system.generate_uuid()
        crush_device_class = getattr(self.args, 'crush_device_class', '')
        if crush_device_class:
            self.secrets['crush_device_class'] = crush_device_class
        tmpfs = not getattr(self.args, 'no_tmpfs', False)
        # an id of the operator's (--osd-id) is reused when it exists
        self.osd_id = prepare_utils.create_id(self.osd_fsid, json.dumps(self.secrets), self.osd_id or None)
        self.osd_path = self.get_osd_path()
        self.created_osd_dir = not system.path_is_mounted(self.osd_path.rstrip('/'))
        prepare_utils.create_osd_path(self.osd_id, tmpfs=tmpfs)
        prepare_utils.get_monmap(self.osd_id)
        prepare_utils.write_keyring(self.osd_id, self.cephx_secret)
        system.chown(self.ssd_device_path)
        system.chown(self.block_device_path)
        self.osd_mkfs()
        common.store_label_meta(self.ssd_device_path, self.osd_id, self.get_cluster_fsid(), self.cephx_secret)

    def add_objectstore_opts(self) -> None:
        self.osd_mkfs_cmd.extend(common.mkfs_device_options(self.ssd_device_path, self.block_device_path))
        if self.get_osdspec_affinity():
            self.osd_mkfs_cmd.extend(['--osdspec-affinity', self.get_osdspec_affinity()])

    def get_cluster_fsid(self) -> str:
        fsid = getattr(self.args, 'cluster_fsid', None)
        return fsid if fsid else conf.ceph.get('global', 'fsid')

    # --- activate -------------------------------------------------------------

    def find(self) -> Dict[str, Any]:
        found = report.scan(self.devices or None)
        if getattr(self.args, 'activate_all', False):
            return found
        return report.select(found, self.osd_id or None, self.osd_fsid or None)

    @decorators.needs_root
    def activate(self) -> None:
        if not (self.devices or self.osd_id or self.osd_fsid or getattr(self.args, 'activate_all', False)):
            raise RuntimeError('raw activate needs --osd-id and --osd-uuid, --device(s), or --all')
        tool.require()
        found = self.find()
        if not found:
            raise RuntimeError('did not find any matching hybridstore OSD to activate')
        for osd_uuid, entry in sorted(found.items(), key=lambda kv: kv[1]['osd_id']):
            if entry.get('missing'):
                raise RuntimeError('osd.%s (%s): no device found for tier(s) %s'
                                   % (entry['osd_id'], osd_uuid, ', '.join(entry['missing'])))
            self.activate_one(entry)

    def activate_one(self, entry: Dict[str, Any]) -> None:
        osd_id = str(entry['osd_id'])
        logger.info('Activating hybridstore osd.%s uuid %s cluster %s', osd_id, entry['osd_uuid'],
                    entry['ceph_fsid'])
        path = common.mount_data_dir(osd_id, tmpfs=not getattr(self.args, 'no_tmpfs', False))
        common.prime(path, report.devices_of(entry))
        self.osd_id, self.osd_fsid = osd_id, entry['osd_uuid']
        terminal.success('ceph-volume raw activate successful for osd ID: %s (hybridstore)' % osd_id)
