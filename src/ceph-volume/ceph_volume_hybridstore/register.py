"""Makes ceph-volume answer `--objectstore hybridstore`, in ceph-volume's own
process, without changing a file of Ceph's.

Ceph's seam is `ceph_volume/objectstore/__init__.py`: the `ObjectStore` enum
and `mapping` from (LVM|RAW, objectstore) to a class. Every caller looks the
class up as `mapping[mode][args.objectstore]` with the argument's string, so
the string keys added here are all the lookup needs; the enum is only the
mapping's key type and nothing else reads it, so it is left as Debian ships
it. Ceph's argument parsers list `bluestore` and `seastore` as the only
choices, so the subcommands that take `--objectstore` (raw prepare/activate,
lvm prepare/create/activate/batch) and those that must see hybridstore devices
(raw list, lvm zap, `ceph-volume activate`) get this package's subclasses
in their mappers (cli.py), which hand every other store to Ceph's code.

register() runs when ceph-volume loads its plugins (the
`ceph_volume_handlers` entry point, before it dispatches a subcommand); it
is idempotent.
"""
import logging

logger = logging.getLogger(__name__)

_registered = False


def register() -> None:
    global _registered
    if _registered:
        return
    from ceph_volume import objectstore
    from ceph_volume.devices.raw.main import Raw
    from ceph_volume.devices.lvm.main import LVM
    import ceph_volume.activate.main as top_activate

    from . import cli, common
    from .lvm import HybridLvm
    from .raw import HybridRaw

    objectstore.mapping['RAW'][common.OBJECTSTORE] = HybridRaw
    objectstore.mapping['LVM'][common.OBJECTSTORE] = HybridLvm
    Raw.mapper.update({'prepare': cli.RawPrepare, 'activate': cli.RawActivate, 'list': cli.RawList})
    LVM.mapper.update({'prepare': cli.LvmPrepare, 'create': cli.LvmCreate, 'activate': cli.LvmActivate,
                       'batch': cli.LvmBatch, 'zap': cli.Zap})
    top_activate.RAWActivate = cli.AnyRawActivate
    top_activate.LVMActivate = cli.AnyLvmActivate
    _registered = True
    logger.debug('hybridstore registered with ceph-volume (raw, lvm)')


def registered() -> bool:
    return _registered
