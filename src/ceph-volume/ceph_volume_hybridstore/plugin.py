"""ceph-volume's plugin entry point (`ceph_volume_handlers`: hybridstore).

Loading it registers hybridstore (register.py). As a subcommand of its own,
`ceph-volume hybridstore` says what was registered and offers what
ceph-volume has no command for in raw mode:

    ceph-volume hybridstore status
    ceph-volume hybridstore deactivate --osd-id N   (raw mode: unmount the tmpfs data directory)
    ceph-volume hybridstore zap DEV...              (raw devices, where lvm zap cannot inspect them)
"""
import argparse
import logging
import os
import shutil
from textwrap import dedent

from ceph_volume import conf, terminal

from . import common, register, tool

logger = logging.getLogger(__name__)

register.register()


class Hybridstore(object):
    help_menu = 'hybridstore OSDs (an SSD and an HDD): status, raw deactivate'
    name = 'hybridstore'
    _help = dedent("""
    ceph-volume with hybridstore (the ceph-volume-hybridstore package).

    These take --objectstore hybridstore, with the SSD as --block.ssd:
        ceph-volume raw prepare --objectstore hybridstore --data HDD --block.ssd SSD
        ceph-volume raw activate --osd-id N --osd-uuid UUID | --all
        ceph-volume raw list
        ceph-volume lvm prepare|create --objectstore hybridstore --data HDD --block.ssd SSD
        ceph-volume lvm activate [--all | ID FSID]
        ceph-volume lvm zap --destroy SSD HDD | --osd-id N

    Subcommands here:
        status      what is registered, and the hybridstore-tool used
        deactivate  --osd-id N: unmount a raw-mode OSD's tmpfs data directory
                    (stop the OSD first; lvm deactivate does this for LVM OSDs)
        zap         DEV...: raw devices zapped as lvm zap zaps them
                    (hybridstore-tool zap of those with a hybridstore label,
                    refused with nothing zapped when one is in use; then
                    wipefs and 10 MiB of zeros each), without ceph-volume's
                    device inspection, which needs udev's data (a host or
                    container without udev: lvm zap fails there with "No
                    udev data could be retrieved")
    """)

    def __init__(self, argv):
        self.argv = argv

    def main(self):
        parser = argparse.ArgumentParser(prog='ceph-volume hybridstore',
                                         formatter_class=argparse.RawDescriptionHelpFormatter,
                                         description=self._help)
        parser.add_argument('command', nargs='?', default='status', choices=['status', 'deactivate', 'zap'])
        parser.add_argument('devices', nargs='*', default=[], help='zap: the raw devices')
        parser.add_argument('--osd-id', help='the OSD to deactivate')
        args = parser.parse_args(self.argv)
        if args.command == 'deactivate':
            return self.deactivate(args.osd_id)
        if args.command == 'zap':
            return self.zap(args.devices)
        return self.status()

    @staticmethod
    def zap(devices):
        from ceph_volume.devices.lvm.zap import zap_device
        if not devices:
            raise SystemExit('ceph-volume hybridstore zap needs the devices to zap')
        for d in devices:
            if not os.path.exists(d):
                raise SystemExit('%s does not exist' % d)
        tool.require()
        labelled = [d for d in devices if tool.show_label(d) is not None]
        if labelled:
            terminal.info('Zapping the hybridstore labels of %s' % ', '.join(labelled))
            tool.zap(labelled)
        for d in devices:
            zap_device(d)
        terminal.success('Zapping successful for: %s' % ', '.join(devices))

    @staticmethod
    def status():
        from ceph_volume import objectstore
        raw = sorted(str(k.value if hasattr(k, 'value') else k) for k in objectstore.mapping['RAW'])
        lvm = sorted(str(k.value if hasattr(k, 'value') else k) for k in objectstore.mapping['LVM'])
        found = shutil.which(tool.tool())
        print('registered: %s' % register.registered())
        print('raw objectstores: %s' % ', '.join(raw))
        print('lvm objectstores: %s' % ', '.join(lvm))
        print('hybridstore-tool: %s' % (found or '%s: not found (set %s)' % (tool.tool(), tool.TOOL_ENV)))

    @staticmethod
    def deactivate(osd_id):
        from ceph_volume.util import system
        if osd_id is None:
            raise SystemExit('ceph-volume hybridstore deactivate needs --osd-id N')
        path = common.osd_path(osd_id)
        if not os.path.isdir(path) or not system.path_is_mounted(path):
            terminal.info('%s is not mounted: nothing to deactivate' % path)
            return
        system.unmount_tmpfs(path)
        terminal.success('deactivated osd.%s (%s unmounted; cluster %s)' % (osd_id, path, conf.cluster))
