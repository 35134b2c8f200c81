"""
Provision the SSD and HDD device of every hybridstore OSD, before the ceph task.

    tasks:
    - install:
    - hybridstore:
        devices: loop      # file (default): nothing to provision, the store
                           #   creates block.ssd and block.hdd in the OSD
                           #   directory (sizes: hybridstore ssd/hdd size)
                           # loop: two sparse images per OSD on loop devices,
                           #   the SSD's marked rotational=0
                           # scratch: the node's scratch devices, one
                           #   non-rotational and one rotational per OSD
    - ceph:

For loop and scratch the task points each osd.N at its devices by adding
`hybridstore ssd path` and `hybridstore hdd path` to overrides.ceph.conf
(section osd.N), which the ceph task merges into ceph.conf before it runs
`ceph-osd --mkfs`. Loop image sizes come from the merged `hybridstore ssd
size` / `hybridstore hdd size` of the osd section (defaults 2G and 8G).
Nothing is done unless the job's `osd objectstore` is hybridstore. On exit
loop devices are detached and their images removed.

With `devices: scratch` the ceph task must not use the same scratch devices
for OSD data (it only formats them for filestore).
"""
import contextlib
import logging
import os
import re

from teuthology import misc

log = logging.getLogger(__name__)

DEFAULT_SSD_SIZE = "2G"
DEFAULT_HDD_SIZE = "8G"
MODES = ("file", "loop", "scratch")


def conf_lookup(section, key, default=None):
    """A key of a ceph conf section, with spaces and underscores equal."""
    want = key.replace("_", " ")
    for k, v in (section or {}).items():
        if k.replace("_", " ") == want:
            return v
    return default


def objectstore_of(overrides):
    conf = ((overrides or {}).get("ceph") or {}).get("conf") or {}
    return str(conf_lookup(conf.get("osd"), "osd objectstore")
               or conf_lookup(conf.get("global"), "osd objectstore") or "bluestore")


def parse_size(text):
    """'512M', '2G', '1048576' -> bytes (K/M/G/T are powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", str(text), re.IGNORECASE)
    if not m:
        raise ValueError("bad size %r" % (text,))
    return int(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ")


def osd_ids(roles):
    """Ids of the osd roles among `roles` ('osd.3' or 'cluster.osd.3')."""
    return sorted(int(r.rsplit(".", 1)[1]) for r in roles if r.split(".")[-2] == "osd")


def pair_devices(ids, devices, rotational):
    """{osd id: (ssd, hdd)} from scratch devices: each OSD gets one
    non-rotational and one rotational device. Raises ValueError when the
    node has too few of either."""
    ssds = [d for d in devices if not rotational.get(d, True)]
    hdds = [d for d in devices if rotational.get(d, True)]
    if len(ssds) < len(ids) or len(hdds) < len(ids):
        raise ValueError("%d OSDs need %d SSDs and %d HDDs; scratch devices give %d and %d (%s)" % (
            len(ids), len(ids), len(ids), len(ssds), len(hdds), ", ".join(devices) or "none"))
    return {osd: (ssds[i], hdds[i]) for i, osd in enumerate(ids)}


def loop_plan(ids, directory, ssd_size, hdd_size):
    """[(osd, role, image, bytes, rotational)] for loop-backed devices."""
    plan = []
    for osd in ids:
        plan.append((osd, "ssd", os.path.join(directory, "hybridstore-osd.%d.ssd.img" % osd),
                     parse_size(ssd_size), 0))
        plan.append((osd, "hdd", os.path.join(directory, "hybridstore-osd.%d.hdd.img" % osd),
                     parse_size(hdd_size), 1))
    return plan


def device_conf(pairs):
    """ceph conf sections pointing each OSD at its devices."""
    return {"osd.%d" % osd: {"hybridstore ssd path": ssd, "hybridstore hdd path": hdd}
            for osd, (ssd, hdd) in sorted(pairs.items())}


def _attach_loops(remote, ids, directory, ssd_size, hdd_size, attached):
    pairs = {}
    for osd, role, image, size, rot in loop_plan(ids, directory, ssd_size, hdd_size):
        remote.run(args=["sudo", "truncate", "-s", str(size), image])
        dev = remote.sh(["sudo", "losetup", "--find", "--show", image]).strip()
        attached.append((remote, dev, image))
        remote.run(args=["sudo", "sh", "-c", "echo %d > /sys/block/%s/queue/rotational" % (rot, os.path.basename(dev))])
        ssd, hdd = pairs.get(osd, (None, None))
        pairs[osd] = (dev, hdd) if role == "ssd" else (ssd, dev)
    return pairs


def _scratch_pairs(remote, ids):
    devices = misc.get_scratch_devices(remote)
    rotational = {}
    for dev in devices:
        name = os.path.basename(os.path.realpath(dev))
        out = remote.sh("cat /sys/block/%s/queue/rotational 2>/dev/null || echo 1" % name).strip()
        rotational[dev] = out != "0"
    return pair_devices(ids, devices, rotational)


@contextlib.contextmanager
def task(ctx, config):
    """Provision per-OSD SSD and HDD devices for hybridstore; see the module
    docstring for the options."""
    if config is None:
        config = {}
    assert isinstance(config, dict), "hybridstore task takes a mapping"
    overrides = ctx.config.setdefault("overrides", {})
    misc.deep_merge(config, overrides.get("hybridstore", {}))
    objectstore = objectstore_of(overrides)
    if objectstore != "hybridstore":
        log.info("osd objectstore is %s: no hybridstore devices to provision", objectstore)
        yield
        return
    mode = config.get("devices", "file")
    if mode not in MODES:
        raise ValueError("hybridstore devices must be one of %s, not %r" % (", ".join(MODES), mode))
    osd_conf = overrides.setdefault("ceph", {}).setdefault("conf", {}).setdefault("osd", {})
    ssd_size = conf_lookup(osd_conf, "hybridstore ssd size", DEFAULT_SSD_SIZE)
    hdd_size = conf_lookup(osd_conf, "hybridstore hdd size", DEFAULT_HDD_SIZE)
    attached = []
    try:
        if mode != "file":
            testdir = misc.get_testdir(ctx)
            for remote, roles in ctx.cluster.only(misc.is_type("osd")).remotes.items():
                ids = osd_ids(roles)
                if mode == "loop":
                    pairs = _attach_loops(remote, ids, testdir, ssd_size, hdd_size, attached)
                else:
                    pairs = _scratch_pairs(remote, ids)
                log.info("hybridstore devices on %s: %s", remote.shortname, pairs)
                misc.deep_merge(overrides["ceph"]["conf"], device_conf(pairs))
        else:
            log.info("hybridstore: device files in each OSD directory (ssd %s, hdd %s)", ssd_size, hdd_size)
        yield
    finally:
        for remote, dev, image in reversed(attached):
            remote.run(args=["sudo", "losetup", "-d", dev], check_status=False)
            remote.run(args=["sudo", "rm", "-f", image], check_status=False)
        if attached:
            log.info("hybridstore: detached %d loop devices", len(attached))

