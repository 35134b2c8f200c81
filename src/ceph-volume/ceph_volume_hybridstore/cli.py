"""ceph-volume's subcommands, as they answer `--objectstore hybridstore`.

Each class here takes the place of Ceph's class in the subcommand's mapper
(register.py) and subclasses it: with `--objectstore hybridstore`, or for an
OSD whose labels or tags say hybridstore, it parses and acts itself; for
everything else it hands the same arguments to Ceph's own code unchanged.
Ceph's parsers list `bluestore` and `seastore` only, so the hybridstore forms
have parsers of their own, with Ceph's option names, plus `--block.ssd`.
"""
import argparse
import logging
from textwrap import dedent
from typing import Any, Dict, List, Optional

from ceph_volume import objectstore, terminal
from ceph_volume.api import lvm as api
from ceph_volume.devices.lvm import activate as lvm_activate
from ceph_volume.devices.lvm import batch as lvm_batch
from ceph_volume.devices.lvm import common as lvm_common
from ceph_volume.devices.lvm import create as lvm_create
from ceph_volume.devices.lvm import prepare as lvm_prepare
from ceph_volume.devices.lvm import zap as lvm_zap
from ceph_volume.devices.raw import activate as raw_activate
from ceph_volume.devices.raw import list as raw_list
from ceph_volume.devices.raw import prepare as raw_prepare
from ceph_volume.objectstore.lvm import Lvm as CephLvm
from ceph_volume.objectstore.raw import Raw as CephRaw
from ceph_volume.systemd import systemctl
from ceph_volume.util import arg_validators, disk
from ceph_volume.util.device import Device

from . import batch, common, report
from .lvm import HybridLvm, is_hybridstore_lv, lvm_osds
from .raw import HybridRaw

logger = logging.getLogger(__name__)

STORES = ['bluestore', 'seastore', common.OBJECTSTORE]


def requested_objectstore(argv: Optional[List[str]]) -> Optional[str]:
    """The value of --objectstore in ARGV, or None."""
    argv = argv or []
    for i, a in enumerate(argv):
        if a == '--objectstore' and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith('--objectstore='):
            return a.split('=', 1)[1]
    return None


def wants_help(argv: Optional[List[str]]) -> bool:
    return bool(argv) and ('-h' in argv or '--help' in argv)


def ceph_main_with_note(run, argv: Optional[List[str]], note: str) -> None:
    """Ceph's own main(); after its --help, a note on the hybridstore form."""
    try:
        run()
    except SystemExit:
        if wants_help(argv):
            print(note)
        raise


def hybridstore_note(prog: str) -> str:
    return dedent("""
    hybridstore (the ceph-volume-hybridstore package): this command also takes
    --objectstore hybridstore, with the SSD as --block.ssd; its options:

        {prog} --objectstore hybridstore --help
    """).format(prog=prog)


def add_ssd_option(parser: argparse.ArgumentParser, lvm: bool) -> None:
    what = 'logical volume (vg/lv) or device' if lvm else 'raw device'
    parser.add_argument('--block.ssd', dest='block_ssd', default=None,
                        help='the SSD of a hybridstore OSD (%s): the fast tier, which also holds RocksDB '
                             'and the commit journal; required with --objectstore hybridstore' % what)


# --- raw ------------------------------------------------------------------------

def raw_prepare_parser(prog: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=description)
    parser.add_argument('--objectstore', dest='objectstore', default=common.OBJECTSTORE, choices=STORES,
                        help='The OSD objectstore (this form: hybridstore).')
    parser.add_argument('--data', required=True, help='the HDD: a raw device, the capacity tier')
    add_ssd_option(parser, lvm=False)
    parser.add_argument('--crush-device-class', dest='crush_device_class', default='',
                        help='Crush device class to assign this OSD to')
    parser.add_argument('--no-tmpfs', action='store_true', help='Do not use a tmpfs mount for OSD data dir')
    parser.add_argument('--osd-id', default=None, type=arg_validators.valid_osd_id,
                        help='Reuse an existing OSD id')
    parser.add_argument('--cluster-fsid', default=None,
                        help="the cluster's fsid (default: ceph.conf's [global] fsid)")
    parser.add_argument('--dmcrypt', action='store_true', help='not supported with hybridstore (refused)')
    return parser


RAW_PREPARE_HELP = dedent("""
    Prepare a hybridstore OSD on two raw devices: an HDD (--data, the
    capacity tier) and an SSD (--block.ssd, the fast tier that also holds
    RocksDB and the commit journal). `ceph osd new`, a tmpfs data directory,
    `ceph-osd --mkfs --osd-objectstore hybridstore`; the OSD's key and meta
    go into the SSD's label, from which `raw activate` makes the data
    directory again.

        ceph-volume raw prepare --objectstore hybridstore --data /dev/sdb --block.ssd /dev/nvme0n1p3

    Refused, with nothing changed: a missing --block.ssd, a device that does
    not exist, is in use, or holds a hybridstore or BlueStore label, the same
    device twice, an SSD larger than the HDD, --dmcrypt.
    """)


class RawPrepare(raw_prepare.Prepare):
    def main(self) -> None:
        if requested_objectstore(self.argv) != common.OBJECTSTORE:
            return ceph_main_with_note(super().main, self.argv, hybridstore_note('ceph-volume raw prepare'))
        parser = raw_prepare_parser('ceph-volume raw prepare', RAW_PREPARE_HELP)
        self.args = parser.parse_args(self.argv)
        self.args.objectstore = common.OBJECTSTORE
        self.objectstore = objectstore.mapping['RAW'][common.OBJECTSTORE](args=self.args)
        self.objectstore.safe_prepare(self.args)


RAW_ACTIVATE_HELP = dedent("""
    Activate hybridstore OSDs found by their device labels: each OSD's data
    directory a tmpfs at /var/lib/ceph/osd/CLUSTER-ID, primed with
    `hybridstore-tool prime-osd-dir` from its SSD and HDD. As for BlueStore in
    raw mode, no systemd unit is made or started (--no-systemd is accepted).

        ceph-volume raw activate --osd-id 0 --osd-uuid UUID
        ceph-volume raw activate --device /dev/nvme0n1p3
        ceph-volume raw activate --all

    Without --objectstore, an OSD whose labels say hybridstore is activated
    here and any other is handed to ceph-volume's own raw activate.
    """)


def raw_activate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='ceph-volume raw activate',
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=RAW_ACTIVATE_HELP)
    parser.add_argument('--device', help='a device of the OSD to activate')
    parser.add_argument('--devices', nargs='*', default=[], help='devices of the OSD(s) to activate')
    parser.add_argument('--osd-id', help='OSD ID to activate')
    parser.add_argument('--osd-uuid', dest='osd_fsid', help='OSD UUID to activate')
    parser.add_argument('--all', dest='activate_all', action='store_true',
                        help='activate every hybridstore OSD found')
    parser.add_argument('--no-systemd', dest='no_systemd', action='store_true',
                        help='accepted for compatibility: raw activate starts no unit')
    parser.add_argument('--objectstore', dest='objectstore', default=common.OBJECTSTORE, choices=STORES,
                        help='The OSD objectstore (this form: hybridstore).')
    parser.add_argument('--no-tmpfs', action='store_true', help='Do not use a tmpfs mount for OSD data dir')
    return parser


class RawActivate(raw_activate.Activate):
    def main(self) -> None:
        store = requested_objectstore(self.argv)
        if store not in (None, common.OBJECTSTORE) or not self.argv:
            return ceph_main_with_note(super().main, self.argv, hybridstore_note('ceph-volume raw activate'))
        parser = raw_activate_parser()
        if store is None:
            if wants_help(self.argv):
                return ceph_main_with_note(super().main, self.argv, hybridstore_note('ceph-volume raw activate'))
            args, _ = parser.parse_known_args(self.argv)
            # ours when --all, or when a hybridstore OSD matches
            if not args.activate_all and not self.matches_hybridstore(args):
                return super().main()
        args = parser.parse_args(self.argv)
        if args.device:
            args.devices = list(args.devices or []) + [args.device]
        args.objectstore = common.OBJECTSTORE
        self.args = args
        self.objectstore = objectstore.mapping['RAW'][common.OBJECTSTORE](args=args)
        self.objectstore.activate()

    @staticmethod
    def matches_hybridstore(args: argparse.Namespace) -> bool:
        devices = list(args.devices or []) + ([args.device] if args.device else [])
        if not (devices or args.osd_id or args.osd_fsid):
            return False
        return bool(report.select(report.scan(devices or None), args.osd_id, args.osd_fsid))


class RawList(raw_list.List):
    """`raw list`: Ceph's BlueStore report, and the hybridstore OSDs found by
    their labels beside them (report.py has the shape)."""

    def generate(self, devices: Optional[List[str]] = None) -> Dict[str, Any]:
        result = super().generate(devices)
        result.update(report.scan(devices))
        return result


# --- lvm ------------------------------------------------------------------------

def lvm_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """Ceph's prepare/create options (its common_args, with hybridstore among
    the stores), --data and --block.ssd as LVs or devices."""
    parser = argparse.ArgumentParser(prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=description)
    for name, kwargs in lvm_common.common_args.items():
        kwargs = dict(kwargs)
        if name == '--objectstore':
            kwargs.update(choices=STORES, default=common.OBJECTSTORE)
        if name == '--data':
            kwargs.update(type=str, help='the HDD: a logical volume (vg/lv) or a device (an LV is made on it)')
        if name in ('--dmcrypt',):
            kwargs = {'action': 'store_true', 'help': 'not supported with hybridstore (refused)'}
        parser.add_argument(name, **kwargs)
    group = parser.add_argument_group('hybridstore')
    add_ssd_option(group, lvm=True)
    group.add_argument('--block.ssd-size', dest='block_ssd_size', default='0', type=disk.Size.parse,
                       help='Size of the SSD LV in case a device was passed in --block.ssd')
    group.add_argument('--block.ssd-slots', dest='block_ssd_slots', default=1, type=int,
                       help='Intended number of slots on the SSD device (the new OSD gets one of those '
                            'slots or 1/nth of the available capacity)')
    return parser


LVM_PREPARE_HELP = dedent("""
    Prepare a hybridstore OSD on logical volumes: the HDD (--data) and the
    SSD (--block.ssd), each an existing LV (vg/lv) or a device that gets a VG
    and an LV. Both LVs are tagged as BlueStore's are (ceph.osd_id,
    ceph.osd_fsid, ceph.block_device, ceph.objectstore=hybridstore, ...), the
    HDD's as ceph.type=block, the SSD's as ceph.type=ssd, named by
    ceph.ssd_device and ceph.ssd_uuid.

        ceph-volume lvm {cmd} --objectstore hybridstore --data vg/hdd --block.ssd vg/ssd
    """)


class LvmPrepare(lvm_prepare.Prepare):
    def main(self) -> None:
        if self.args is not None or requested_objectstore(self.argv) != common.OBJECTSTORE:
            return ceph_main_with_note(super().main, self.argv, hybridstore_note('ceph-volume lvm prepare'))
        parser = lvm_parser('ceph-volume lvm prepare', LVM_PREPARE_HELP.format(cmd='prepare'))
        self.args = parser.parse_args(self.argv)
        self.objectstore = objectstore.mapping['LVM'][common.OBJECTSTORE](args=self.args)
        self.objectstore.safe_prepare()


class LvmCreate(lvm_create.Create):
    def main(self) -> None:
        if self.args is not None or requested_objectstore(self.argv) != common.OBJECTSTORE:
            return ceph_main_with_note(super().main, self.argv, hybridstore_note('ceph-volume lvm create'))
        parser = lvm_parser('ceph-volume lvm create', LVM_PREPARE_HELP.format(cmd='create')
                            + '\n    then activates it (and, without --no-systemd, starts it).\n')
        self.args = parser.parse_args(self.argv)
        # Ceph's create(): prepare, then activate with a rollback of the id
        # (and a zap of the tagged LVs) when activation fails
        self.create()


def lvm_activate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='ceph-volume lvm activate',
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description='Activate hybridstore OSDs from their LVM tags: a tmpfs data '
                                                 'directory primed from the labels, then (without --no-systemd) '
                                                 'the units enabled and the OSD started.')
    parser.add_argument('osd_id', metavar='ID', nargs='?', help='The ID of the OSD')
    parser.add_argument('osd_fsid', metavar='FSID', nargs='?', help='The FSID of the OSD')
    parser.add_argument('--objectstore', dest='objectstore', default=common.OBJECTSTORE, choices=STORES)
    parser.add_argument('--all', dest='activate_all', action='store_true',
                        help='Activate all OSDs found in the system')
    parser.add_argument('--no-systemd', dest='no_systemd', action='store_true',
                        help='Skip creating and enabling systemd units and starting OSD services')
    parser.add_argument('--no-tmpfs', action='store_true', help='Do not use a tmpfs mount for OSD data dir')
    parser.add_argument('--auto-detect-objectstore', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--bluestore', action='store_true', help=argparse.SUPPRESS)
    return parser


class LvmActivate(lvm_activate.Activate):
    """`lvm activate`: hybridstore OSDs by their ceph.objectstore tag; with
    --all, the hybridstore ones here and every other one by Ceph's code, one
    at a time as Ceph's activate_all does it."""

    def main(self) -> None:
        store = requested_objectstore(self.argv)
        if self.args is not None or not self.argv or wants_help(self.argv) or store not in (None, common.OBJECTSTORE):
            return ceph_main_with_note(super().main, self.argv, hybridstore_note('ceph-volume lvm activate'))
        args = lvm_activate_parser().parse_args(self.argv)
        if args.activate_all:
            return self.activate_all(args, store)
        if store is None and not self.is_hybridstore_osd(args.osd_id, args.osd_fsid):
            return super().main()
        args.objectstore = common.OBJECTSTORE
        self.args = args
        HybridLvm(args).activate()

    @staticmethod
    def is_hybridstore_osd(osd_id: Optional[str], osd_fsid: Optional[str]) -> bool:
        tags = {k: v for k, v in (('ceph.osd_id', osd_id), ('ceph.osd_fsid', osd_fsid)) if v}
        if not tags:
            return False
        return any(is_hybridstore_lv(lv) for lv in api.get_lvs(tags=tags) if lv.tags.get('ceph.type') == 'block')

    def activate_all(self, args: argparse.Namespace, store: Optional[str]) -> None:
        osds = lvm_osds()
        ours = {f: o for f, o in osds.items() if o['objectstore'] == common.OBJECTSTORE}
        if store is None and not ours:
            return super().main()
        others = {} if store == common.OBJECTSTORE else {f: o for f, o in osds.items() if f not in ours}
        if not ours and not others:
            terminal.warning('Was unable to find any OSDs to activate')
            terminal.warning('Verify OSDs are present with "ceph-volume lvm list"')
            return
        for osd_fsid, o in sorted(list(ours.items()) + list(others.items()), key=lambda kv: str(kv[1]['osd_id'])):
            osd_id = o['osd_id']
            if not args.no_systemd and systemctl.osd_is_active(osd_id):
                terminal.warning('OSD ID %s FSID %s process is active. Skipping activation' % (osd_id, osd_fsid))
                continue
            terminal.info('Activating OSD ID %s FSID %s' % (osd_id, osd_fsid))
            if osd_fsid in ours:
                HybridLvm(args).activate(args, osd_id=osd_id, osd_fsid=osd_fsid)
            else:
                theirs = argparse.Namespace(**vars(args))
                theirs.objectstore = o['objectstore']
                objectstore.mapping['LVM'][o['objectstore']](args=theirs).activate(theirs, osd_id=osd_id,
                                                                                   osd_fsid=osd_fsid)


BATCH_HELP = dedent("""
    Make hybridstore OSDs on several HDDs that share SSDs: each SSD split
    into one LV per HDD it serves (the HDDs given to the SSDs in order, as
    evenly as they go), each HDD an LV of its own; every device checked
    before anything is made. --report prints the plan and changes nothing.

        ceph-volume lvm batch --objectstore hybridstore --ssd-devices /dev/nvme0n1 /dev/sdb /dev/sdc
    """)


def batch_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='ceph-volume lvm batch', formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=BATCH_HELP)
    parser.add_argument('devices', metavar='HDD', nargs='*', default=[], help='the HDDs, one OSD each')
    parser.add_argument('--ssd-devices', nargs='*', default=[], help='the SSDs the HDDs share')
    parser.add_argument('--objectstore', dest='objectstore', default=common.OBJECTSTORE, choices=STORES)
    parser.add_argument('--report', action='store_true', help='print the plan only')
    parser.add_argument('--yes', action='store_true', help='make the OSDs without asking')
    parser.add_argument('--format', default='pretty', choices=['json', 'pretty'], help='--report format')
    parser.add_argument('--crush-device-class', dest='crush_device_class', default='', help='for every OSD')
    parser.add_argument('--no-systemd', dest='no_systemd', action='store_true',
                        help='Skip creating and enabling systemd units and starting OSD services')
    parser.add_argument('--prepare', action='store_true', help='only prepare the OSDs, do not activate them')
    return parser


class LvmBatch(lvm_batch.Batch):
    """Ceph's Batch parses (and validates its devices) as it is made, with
    bluestore and seastore as the only stores: for hybridstore, nothing of
    it runs."""

    def __init__(self, argv: List[str]) -> None:
        self.argv = argv
        self.hybridstore = requested_objectstore(argv) == common.OBJECTSTORE
        if not self.hybridstore:
            ceph_main_with_note(lambda: super(LvmBatch, self).__init__(argv), argv,
                                hybridstore_note('ceph-volume lvm batch'))

    def main(self) -> None:
        if not self.hybridstore:
            return super().main()
        self.args = batch_parser().parse_args(self.argv)
        batch.run(self.args)


class Zap(lvm_zap.Zap):
    """`lvm zap`: a device that holds a hybridstore label is zapped by
    `hybridstore-tool zap` first (both label copies and the kvfs
    superblocks; refused, and nothing zapped, when a device is in use), then
    as Ceph zaps any device. `--osd-id`/`--osd-fsid` also find raw
    hybridstore OSDs by their labels (both devices)."""

    def find_associated_devices(self) -> List[Device]:
        found = report.select(report.scan(), self.args.osd_id, self.args.osd_fsid)
        ours = [p for e in found.values() for p in report.devices_of(e)]
        try:
            theirs = super().find_associated_devices()
        except SystemExit:
            if not ours:
                raise
            theirs = []
        paths = {d.path for d in theirs}
        return theirs + [Device(p) for p in ours if p not in paths]

    def zap(self) -> None:
        labelled = [d.path for d in (self.args.devices or []) if report.tool.show_label(d.path) is not None]
        if labelled:
            terminal.info('Zapping the hybridstore labels of %s' % ', '.join(labelled))
            report.tool.zap(labelled)
        super().zap()


# --- ceph-volume activate (no subcommand of a mode) ---------------------------------

class AnyRawActivate(object):
    """`ceph-volume activate --osd-id N --osd-uuid U` tries raw first: a
    hybridstore OSD found by its labels is activated here, anything else by
    Ceph's raw activate."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def activate(self) -> None:
        osd_id, osd_fsid = getattr(self.args, 'osd_id', None), getattr(self.args, 'osd_fsid', None)
        if (osd_id or osd_fsid) and report.select(report.scan(), osd_id, osd_fsid):
            return HybridRaw(self.args).activate()
        return CephRaw(self.args).activate()


class AnyLvmActivate(object):
    """... then LVM: a hybridstore OSD by its tags, anything else by Ceph's."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def activate(self, args: Optional[argparse.Namespace] = None, osd_id: Optional[str] = None,
                 osd_fsid: Optional[str] = None) -> None:
        if LvmActivate.is_hybridstore_osd(osd_id, osd_fsid):
            return HybridLvm(self.args).activate(args, osd_id=osd_id, osd_fsid=osd_fsid)
        return CephLvm(self.args).activate(args, osd_id=osd_id, osd_fsid=osd_fsid)

