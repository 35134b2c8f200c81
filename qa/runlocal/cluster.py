"""A cluster on 127.0.0.1, driven through qa/standalone/hybridstore-helpers.sh.

The bash library owns every step that touches daemons (conf rendering, mkfs,
start, stop by pid file, loop devices), so the standalone scripts and this
runner start clusters the same way. Each call runs one helper in a fresh
bash with the cluster's environment; all state lives in the cluster
directory.
"""
import os
import shlex
import subprocess

from .suite import QA_DIR

HELPERS = os.path.join(QA_DIR, "standalone", "hybridstore-helpers.sh")
MON_PORT_BASE = 17700


class HelperError(Exception):
    pass


def conf_value(value):
    """A YAML conf value as ceph.conf spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def conf_lines(conf):
    """{section: {key: value}} -> the helpers' conf.tsv lines."""
    lines = []
    for section, keys in (conf or {}).items():
        for key, value in (keys or {}).items():
            text = conf_value(value)
            if "\n" in text or "\t" in text:
                raise ValueError("conf value of %s/%s has a tab or newline" % (section, key))
            lines.append("%s\t%s\t%s\n" % (section, key, text))
    return lines


def conf_get(conf, section, key, default=None):
    """A key of a {section: {key: value}} conf, with ' ' and '_' equal."""
    want = key.replace("_", " ")
    for k, v in (conf or {}).get(section, {}).items() or []:
        if k.replace("_", " ") == want:
            return v
    return default


class Cluster:
    def __init__(self, directory, objectstore, ceph_osd, devices="file", log=None):
        self.dir = directory
        self.objectstore = objectstore
        self.ceph_osd = ceph_osd
        self.devices = devices
        self.log = log
        self.osds = []
        self.env = dict(os.environ)
        self.env.update({
            "HS_OBJECTSTORE": objectstore,
            "HS_DEVICES": devices,
            "CEPH_OSD": ceph_osd,
            "CEPH_CONF": os.path.join(directory, "ceph.conf"),
        })
        self.started = False

    def helper(self, script, timeout=600, check=True):
        """Runs `script` (bash) after sourcing the helpers; returns stdout."""
        cmd = "source %s && %s" % (shlex.quote(HELPERS), script)
        try:
            p = subprocess.run(["bash", "-c", cmd], env=self.env, stdout=subprocess.PIPE,
                               stderr=self.log or subprocess.PIPE, timeout=timeout, text=True)
        except subprocess.TimeoutExpired:
            raise HelperError("timed out after %ds: %s" % (timeout, script))
        if check and p.returncode != 0:
            err = p.stderr.strip().splitlines()[-5:] if p.stderr else []
            raise HelperError("%s: exit %d%s" % (script, p.returncode, (": " + " / ".join(err)) if err else ""))
        return p.stdout.strip()

    def start(self, conf, num_osds, sizes=None):
        port = self.helper("pick_mon_port %d" % MON_PORT_BASE, timeout=60)
        self.env["CEPH_MON"] = "127.0.0.1:%s" % port
        if sizes:
            self.env["HS_SSD_SIZE"], self.env["HS_HDD_SIZE"] = sizes
        d = shlex.quote(self.dir)
        self.helper("setup %s" % d, timeout=120)
        self.started = True
        with open(os.path.join(self.dir, "conf.tsv"), "a") as f:
            f.writelines(conf_lines(conf))
        self.helper("conf_render %s" % d, timeout=60)
        self.osds = list(range(num_osds))
        self.helper("run_cluster %s %d" % (d, num_osds), timeout=300 + 300 * num_osds)

    def ceph(self, *args, timeout=120):
        return self.helper("ceph_cli %s" % " ".join(shlex.quote(a) for a in args), timeout=timeout)

    def wait_for_clean(self, timeout):
        self.helper("wait_for_clean %d" % timeout, timeout=timeout + 60)

    def health(self):
        return self.ceph("health")

    def kill_osd(self, osd, signal="KILL"):
        self.helper("stop_osd %s %d %s" % (shlex.quote(self.dir), osd, signal), timeout=180)

    def revive_osd(self, osd):
        self.helper("activate_osd %s %d" % (shlex.quote(self.dir), osd), timeout=600)

    def teardown(self, keep=False):
        """Stops every daemon and detaches loop devices; keeps DIR if keep."""
        if not os.path.isdir(self.dir):
            return
        self.helper("teardown %s %s" % (shlex.quote(self.dir), "kept" if keep else "''"), timeout=600)
