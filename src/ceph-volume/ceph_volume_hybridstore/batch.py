"""`ceph-volume lvm batch --objectstore hybridstore`: several HDDs sharing
SSDs, each SSD split into one LV per HDD it serves, as BlueStore's batch
splits a `--db-devices` device into block.db LVs.

    ceph-volume lvm batch --objectstore hybridstore --ssd-devices /dev/nvme0n1 /dev/sdb /dev/sdc /dev/sdd

The HDDs are given to the SSDs in order, as evenly as they go (with 3 HDDs
and 2 SSDs: 2 on the first, 1 on the second); an SSD with N HDDs becomes a
VG with N LVs of 1/N of it each (`--block.ssd-slots N` of lvm prepare).
Every device is checked before anything is made (the checks of lvm
prepare, an SSD share not larger than its HDD, and at least MIN_SSD_SHARE
for RocksDB and the journal); `--report` prints the plan and changes
nothing. Each OSD is then made by HybridLvm as `lvm create` (or `lvm
prepare` with --prepare) makes it.
"""
import argparse
import json
import logging
from typing import Any, Dict, List

from ceph_volume import terminal

from . import checks, tool

logger = logging.getLogger(__name__)

# mkfs refuses an SSD tier under about 100 MiB ("SSD tier too small to hold
# RocksDB"); a share below this is refused before anything is made.
MIN_SSD_SHARE = 128 << 20


def plan(hdds: List[str], ssds: List[str]) -> List[Dict[str, Any]]:
    """[{'data': HDD, 'block_ssd': SSD, 'slots': N}, ...] in the HDDs' order."""
    if not ssds:
        raise checks.Refused('lvm batch --objectstore hybridstore needs --ssd-devices SSD...: every hybridstore '
                             'OSD needs an SSD')
    if not hdds:
        raise checks.Refused('lvm batch --objectstore hybridstore needs HDD devices')
    per, extra = divmod(len(hdds), len(ssds))
    out: List[Dict[str, Any]] = []
    i = 0
    for n, ssd in enumerate(ssds):
        count = per + (1 if n < extra else 0)
        for hdd in hdds[i:i + count]:
            out.append({'data': hdd, 'block_ssd': ssd, 'slots': count})
        i += count
    return out


def check_plan(osds: List[Dict[str, Any]]) -> None:
    """Every device checked before anything is made."""
    tool.require()
    seen: Dict[str, str] = {}
    for what, dev in [('HDD', o['data']) for o in osds] + [('SSD', o['block_ssd']) for o in osds]:
        if dev in seen and not (what == 'SSD' and seen[dev] == 'SSD'):
            raise checks.Refused('%s is named twice (as %s and %s)' % (dev, seen[dev], what))
        seen[dev] = what
    for dev, what in seen.items():
        arg = '--ssd-devices' if what == 'SSD' else 'HDD'
        checks.check_exists(dev, arg)
        checks.check_not_in_use(dev, arg)
        checks.check_no_store(dev, arg)
    for o in osds:
        share = checks.device_size(o['block_ssd']) // o['slots']
        hdd = checks.device_size(o['data'])
        if share > hdd:
            raise checks.Refused('the share of %s for %s (%s, 1/%d of it) is larger than the HDD (%s)'
                                 % (o['block_ssd'], o['data'], checks.human(share), o['slots'], checks.human(hdd)))
        if share < MIN_SSD_SHARE:
            raise checks.Refused('the share of %s for %s (%s, 1/%d of it) is under %s, too small for RocksDB '
                                 'and the journal' % (o['block_ssd'], o['data'], checks.human(share), o['slots'],
                                                      checks.human(MIN_SSD_SHARE)))


def report(osds: List[Dict[str, Any]], fmt: str) -> str:
    if fmt == 'json':
        return json.dumps([{'data': o['data'], 'block_ssd': o['block_ssd'], 'ssd_slots': o['slots'],
                            'objectstore': 'hybridstore'} for o in osds], indent=4, sort_keys=True)
    lines = ['Total OSDs: %d' % len(osds), '']
    for o in osds:
        lines.append('  hybridstore OSD: data (HDD) %s, ssd %s (1/%d of it)' % (o['data'], o['block_ssd'], o['slots']))
    return '\n'.join(lines)


def osd_args(batch_args: argparse.Namespace, o: Dict[str, Any]) -> argparse.Namespace:
    """What lvm prepare/create would have parsed for one OSD of the plan."""
    return argparse.Namespace(
        objectstore='hybridstore', data=o['data'], data_size=0, data_slots=1, block_ssd=o['block_ssd'],
        block_ssd_size=0, block_ssd_slots=o['slots'], osd_id=None, osd_fsid=None, cluster_fsid=None,
        crush_device_class=getattr(batch_args, 'crush_device_class', '') or '', dmcrypt=False,
        dmcrypt_format_opts=None, dmcrypt_open_opts=None, with_tpm=False, tpm2_pcrs='7',
        no_systemd=getattr(batch_args, 'no_systemd', False), no_tmpfs=False, bluestore=False)


def run(args: argparse.Namespace) -> None:
    from ceph_volume.devices.lvm.common import rollback_osd
    from .lvm import HybridLvm
    osds = plan(list(args.devices), list(args.ssd_devices or []))
    check_plan(osds)
    if args.report:
        print(report(osds, args.format))
        return
    if not args.yes:
        print(report(osds, 'pretty'))
        raise SystemExit('lvm batch --objectstore hybridstore: pass --yes to make these OSDs (or --report to '
                         'only see the plan)')
    for o in osds:
        a = osd_args(args, o)
        store = HybridLvm(a)
        # the plan's checks stand for each OSD's: the 2nd OSD on an SSD
        # finds it an LVM PV (in use) by design
        store.checked = True
        store.safe_prepare(a)
        if args.prepare:
            continue
        try:
            store.activate()
        except Exception:
            logger.exception('lvm activate was unable to complete, while creating the OSD')
            rollback_osd(store.osd_id)
            raise
        terminal.success('ceph-volume lvm batch: osd.%s on %s (ssd %s)' % (store.osd_id, o['data'], o['block_ssd']))
