"""Finding HybridStore OSDs by their device labels (raw mode).

The SSD's label carries the OSD's meta keys (`whoami`, `ceph_fsid`,
`osd_key`, ...) and the store's tier table; every other tier's label carries
the store's fsid and its role. An OSD is reported in the shape `ceph-volume
raw list` gives BlueStore OSDs, keyed by the OSD's fsid:

    {"<osd fsid>": {"osd_uuid": ..., "osd_id": 0, "ceph_fsid": ...,
                    "type": "hybridstore", "device": "<HDD>",
                    "device_ssd": "<SSD>"}}

`device` is the capacity tier (the HDD, what `--data` named), as BlueStore's
`device` is its `block`; `device_ssd` is the SSD (`--block.ssd`). A store with
more tiers also has `device_tier2`, `device_tier3`. A tier whose device was
not found is left out and named in `missing`.
"""
import logging
import os
from typing import Any, Dict, List, Optional

from ceph_volume.util import disk

from . import tool

logger = logging.getLogger(__name__)


def candidate_devices() -> List[str]:
    """Every block device the host has, less the LVs of ceph-volume's LVM
    OSDs (listed by `lvm list`), as `raw list` scans them."""
    from ceph_volume.devices.raw.list import List as RawList
    lister = RawList([])
    lister.info_devices = lister.exclude_invalid_devices(disk.lsblk_all(abspath=True))
    lister.devices_to_scan = [d['NAME'] for d in lister.info_devices]
    try:
        lister.exclude_lvm_osd_devices()
    except Exception as e:  # no LVM here: nothing to exclude
        logger.debug('not excluding LVM OSD devices: %s', e)
    return lister.devices_to_scan


def read_labels(devices: List[str]) -> List[tool.Label]:
    labels = []
    for d in devices:
        label = tool.show_label(d)
        if label is not None:
            labels.append(label)
    return labels


def osds_from_labels(labels: List[tool.Label]) -> Dict[str, Any]:
    """The report (module docstring) from labels read."""
    by_fsid: Dict[str, Dict[str, tool.Label]] = {}
    for label in labels:
        if not label.committed:
            logger.debug('%s: hybridstore label of %s without mkfs_done, skipped', label.device, label.fsid)
            continue
        # The first device found for a role wins (the same store on two
        # paths, e.g. a multipath device, reports the first).
        by_fsid.setdefault(label.fsid, {}).setdefault(label.role, label)
    result: Dict[str, Any] = {}
    for fsid, roles in by_fsid.items():
        ssd = roles.get('ssd')
        if ssd is None:
            logger.debug('hybridstore %s: no ssd label found (devices %s)', fsid,
                         [l.device for l in roles.values()])
            continue
        if ssd.osd_id is None or ssd.ceph_fsid is None:
            logger.warning('%s: a hybridstore store (%s) that is not an OSD (no whoami/ceph_fsid in its label)',
                           ssd.device, fsid)
            continue
        entry: Dict[str, Any] = {
            'osd_uuid': fsid,
            'osd_id': int(ssd.osd_id),
            'ceph_fsid': ssd.ceph_fsid,
            'type': 'hybridstore',
            'device_ssd': ssd.device,
        }
        missing = []
        for tier in ssd.tiers or ['ssd', 'hdd']:
            if tier == 'ssd':
                continue
            key = 'device' if tier == 'hdd' else 'device_' + tier
            if tier in roles:
                entry[key] = roles[tier].device
            else:
                missing.append(tier)
        if missing:
            entry['missing'] = missing
        result[fsid] = entry
    return result


def scan(devices: Optional[List[str]] = None) -> Dict[str, Any]:
    """HybridStore OSDs on DEVICES (default: every device of the host)."""
    if not devices or not any(devices):
        devices = candidate_devices()
    return osds_from_labels(read_labels(devices))


def select(found: Dict[str, Any], osd_id: Optional[str] = None,
           osd_fsid: Optional[str] = None) -> Dict[str, Any]:
    """The OSDs of FOUND with that id and/or fsid (all when neither given)."""
    return {u: e for u, e in found.items()
            if (osd_id in (None, '') or str(e['osd_id']) == str(osd_id))
            and (osd_fsid in (None, '') or u == osd_fsid)}


def devices_of(entry: Dict[str, Any]) -> List[str]:
    """An OSD's devices, SSD first (the order prime-osd-dir takes)."""
    devs = [entry['device_ssd']]
    for key in ('device_tier2', 'device_tier3', 'device'):
        if entry.get(key):
            devs.append(entry[key])
    return devs


def realpath(path: str) -> str:
    return os.path.realpath(path)
