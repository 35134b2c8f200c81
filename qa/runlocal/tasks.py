"""The teuthology tasks the local runner can honour, each a context manager
entered in job order and left in reverse order, as teuthology runs them.

Every task declares the options it honours. A job whose tasks use anything
else is skipped as a whole before it starts ("unsupported task X",
"unsupported option Y of task X"), so no job is reported as passed after
running only part of what it describes.
"""
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time

from .cluster import Cluster, HelperError, conf_get
from .context import TaskFailed, TaskSkipped, roles_of, roles_of_type, spawn, stop_group
from .suite import QA_DIR, TOP_DIR
from .thrasher import Thrasher

ANY = None


def off(value):
    return not value


def one_of(*values):
    return lambda v: v in values


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_list_of_str(v):
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def is_bool(v):
    return isinstance(v, bool)


def duration_seconds(value, default):
    """teuthology's workunit timeout: seconds, or '30m', '3h', '1d'."""
    if value is None:
        return default
    if is_int(value):
        return value
    m = re.fullmatch(r"(\d+)([smhd]?)", str(value).strip())
    if not m:
        raise ValueError("bad duration %r" % value)
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


class Task:
    name = ""
    options = {}  # option -> ANY or a predicate its value must satisfy
    any_options = False

    def unsupported(self, config, job_config):
        """Why this task's config cannot be honoured here, or None."""
        if config is None:
            return None
        if not isinstance(config, dict):
            return "task %s: config is a %s, not a mapping" % (self.name, type(config).__name__)
        if self.any_options:
            return None
        for key, value in config.items():
            if key not in self.options:
                return "unsupported option %s of task %s" % (key, self.name)
            check = self.options[key]
            if check is not None and not check(value):
                return "unsupported value %s=%r of task %s" % (key, value, self.name)
        return None

    def run(self, ctx, config):  # a context manager
        raise NotImplementedError


def require_cluster(ctx, task):
    if ctx.cluster is None:
        raise TaskFailed("task %s needs a cluster (no ceph task before it)" % task)


def clients_in(ctx, clients):
    """Client roles of a task's `clients` (list, or mapping with 'all')."""
    known = roles_of_type(ctx.config, "client")
    if clients is None:
        return known[:1]
    names = clients if isinstance(clients, list) else list(clients)
    out = []
    for n in names:
        out.extend(known if n == "all" else [n])
    for n in out:
        if n not in known:
            raise TaskFailed("client %s is not a role of this job" % n)
    return out


class Install(Task):
    """Packages are not installed locally; the binaries a job needs are checked."""
    name = "install"
    any_options = True
    binaries = ("ceph-mon", "ceph-mgr", "ceph", "rados", "monmaptool", "uuidgen", "jq", "python3")

    @contextlib.contextmanager
    def run(self, ctx, config):
        missing = [b for b in self.binaries if not shutil.which(b)]
        if missing:
            raise TaskFailed("not installed: %s (make qa-deps installs them)" % ", ".join(missing))
        ctx.note("install: nothing installed here; checked %s" % ", ".join(self.binaries))
        yield


class Hybridstore(Task):
    """Device provisioning (qa/tasks/hybridstore.py in a lab). Locally the
    cluster helpers make the devices: sparse files in each OSD directory
    (devices: file) or loop devices with the SSD set rotational=0 (loop)."""
    name = "hybridstore"
    options = {"devices": one_of("file", "loop")}

    @contextlib.contextmanager
    def run(self, ctx, config):
        config = config or {}
        ctx.devices = ctx.devices_override or config.get("devices", "file")
        if ctx.devices == "loop" and os.geteuid() != 0:
            raise TaskSkipped("loop devices need root")
        yield


class Ceph(Task):
    """A cluster on 127.0.0.1: one mon, one mgr, an OSD per osd role; the
    conf is the merged `conf` of the task and its overrides. At the end, the
    cluster log is checked for [ERR]/[WRN]/[SEC] lines not in log-ignorelist,
    as the ceph task does."""
    name = "ceph"
    options = {
        "conf": lambda v: isinstance(v, dict),
        "log-ignorelist": is_list_of_str,
        "log-whitelist": is_list_of_str,
        "wait-for-healthy": is_bool,
        "wait-for-scrub": off,
        "fs": ANY,              # OSD data filesystem in a lab; locally the temp directory's
        "cluster": one_of("ceph"),
    }
    healthy_timeout = 180

    def unsupported(self, config, job_config):
        reason = super().unsupported(config, job_config)
        if reason:
            return reason
        mons = roles_of_type(job_config, "mon")
        if len(mons) != 1:
            return "%d monitors; the local runner starts one" % len(mons)
        if len(roles_of_type(job_config, "mgr")) > 1:
            return "more than one mgr"
        return None

    @staticmethod
    def objectstore_of(config):
        conf = (config or {}).get("conf") or {}
        return str(conf_get(conf, "osd", "osd objectstore") or conf_get(conf, "global", "osd objectstore")
                   or "bluestore")

    @staticmethod
    def device_sizes(conf, objectstore):
        if objectstore == "hybridstore":
            return (str(conf_get(conf, "osd", "hybridstore ssd size", "1G")),
                    str(conf_get(conf, "osd", "hybridstore hdd size", "8G")))
        block = conf_get(conf, "osd", "bluestore block size", 8 << 30)
        return ("1G", str(block))

    @contextlib.contextmanager
    def run(self, ctx, config):
        config = config or {}
        conf = config.get("conf") or {}
        ctx.objectstore = self.objectstore_of(config)
        ctx.ceph_osd = ctx.osd_choice.binary_for(ctx.objectstore)
        osds = sorted(int(r.split(".")[1]) for r in roles_of_type(ctx.config, "osd"))
        if osds != list(range(len(osds))):
            raise TaskSkipped("osd ids %s are not 0..n-1" % osds)
        if config.get("fs"):
            ctx.note("ceph: fs %s not used locally (OSD directories on the local filesystem)" % config["fs"])
        cdir = tempfile.mkdtemp(prefix="hs-local-", dir=os.environ.get("HS_CLUSTER_TMP", "/tmp"))
        cluster = Cluster(cdir, ctx.objectstore, ctx.ceph_osd, ctx.devices, log=ctx.log)
        ctx.note("ceph: %s on %s OSDs, ceph-osd %s, devices %s%s" % (
            ctx.objectstore, len(osds), ctx.ceph_osd, ctx.devices,
            "" if ctx.objectstore == "hybridstore" else " (baseline, not hybridstore)"))
        failed = True
        log_start = None
        try:
            try:
                cluster.start(conf, len(osds), self.device_sizes(conf, ctx.objectstore))
            except HelperError as e:
                raise TaskFailed("cluster start: %s" % e)
            ctx.cluster = cluster
            self.check_objectstore(cluster, ctx.objectstore)
            if config.get("wait-for-healthy", True):
                self.wait_healthy(cluster)
            # The log is checked from here on: while the runner adds OSDs one
            # by one the mon warns about too few of them, which is bring-up,
            # not the job.
            log_start = self.log_size(cdir)
            yield
            failed = False
        finally:
            ctx.cluster = None
            try:
                bad = self.first_log_error(cdir, config, log_start) if log_start is not None else None
                cluster.teardown(keep=True)
            finally:
                self.archive_logs(ctx, cdir)
                shutil.rmtree(cdir, ignore_errors=True)
            if bad and not failed:
                raise TaskFailed('"%s" in cluster log' % bad)

    @staticmethod
    def check_objectstore(cluster, objectstore):
        """Every OSD must report the store the job asked for (a job is not a
        hybridstore pass unless its OSDs say they run hybridstore)."""
        for osd in cluster.osds:
            try:
                got = cluster.helper("osd_metadata_field %d osd_objectstore" % osd, timeout=120)
            except HelperError as e:
                raise TaskFailed("osd.%d metadata: %s" % (osd, e))
            if got != objectstore:
                raise TaskFailed("osd.%d reports osd_objectstore %r, not %s" % (osd, got, objectstore))

    def wait_healthy(self, cluster):
        deadline = time.monotonic() + self.healthy_timeout
        health = ""
        while time.monotonic() < deadline:
            try:
                health = cluster.health()
            except HelperError as e:
                health = str(e)
            if health.startswith("HEALTH_OK"):
                return
            time.sleep(2)
        raise TaskFailed("cluster not healthy after %ds: %s" % (self.healthy_timeout, health))

    @staticmethod
    def log_size(cdir):
        try:
            return os.path.getsize(os.path.join(cdir, "cluster.log"))
        except OSError:
            return 0

    @staticmethod
    def first_log_error(cdir, config, offset=0):
        path = os.path.join(cdir, "cluster.log")
        if not os.path.exists(path):
            return None
        ignore = [re.compile(p) for p in (config.get("log-ignorelist") or []) + (config.get("log-whitelist") or [])]
        alarm = re.compile(r"\[(ERR|WRN|SEC)\]")
        with open(path, errors="replace") as f:
            f.seek(offset)
            for line in f:
                if alarm.search(line) and not any(p.search(line) for p in ignore):
                    return line.strip()
        return None

    @staticmethod
    def archive_logs(ctx, cdir):
        dest = os.path.join(ctx.archive, "cluster")
        os.makedirs(dest, exist_ok=True)
        for root, _, files in os.walk(cdir):
            for f in files:
                if f.endswith(".log") or f in ("ceph.conf", "conf.tsv"):
                    src = os.path.join(root, f)
                    rel = os.path.relpath(src, cdir).replace(os.sep, "_")
                    try:
                        shutil.copy(src, os.path.join(dest, rel))
                    except OSError:
                        pass


class Background:
    """Client processes started when a task is entered and joined when it is
    left, as teuthology's radosbench and rados tasks do."""

    def __init__(self, ctx, what, timeout):
        self.ctx = ctx
        self.what = what
        self.timeout = timeout
        self.procs = []

    def start(self, argv, env):
        self.ctx.say("%s (background): %s" % (self.what, " ".join(argv)))
        self.procs.append((argv, spawn(argv, env, self.ctx.log, self.ctx.testdir)))

    def join(self, abandon=False):
        deadline = time.monotonic() + self.timeout
        errors = []
        try:
            for argv, p in self.procs:
                if abandon:
                    stop_group(p, grace=30)
                    continue
                try:
                    rc = p.wait(timeout=max(1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    stop_group(p)
                    errors.append("%s timed out after %ds" % (self.what, self.timeout))
                    continue
                if rc != 0:
                    errors.append("%s exited %d (%s)" % (self.what, rc, " ".join(argv)))
        except BaseException:  # interrupted while waiting: none may outlive the job
            for _, p in self.procs:
                if p.poll() is None:
                    stop_group(p, grace=30)
            raise
        if errors:
            raise TaskFailed("; ".join(errors))


def create_pool(ctx, name, pg_num=16):
    try:
        ctx.cluster.ceph("osd", "pool", "create", name, str(pg_num))
        ctx.cluster.ceph("osd", "pool", "application", "enable", name, "rados")
    except HelperError as e:
        raise TaskFailed("pool %s: %s" % (name, e))


def remove_pool(ctx, name):
    try:
        ctx.cluster.ceph("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it")
    except HelperError as e:
        ctx.note("could not remove pool %s: %s" % (name, e))


class RadosBench(Task):
    """rados bench per client. A seq or rand run first writes for 60 s (with
    --no-cleanup), as Ceph's radosbench task does."""
    name = "radosbench"
    options = {
        "clients": is_list_of_str, "time": is_int, "pool": lambda v: isinstance(v, str),
        "create_pool": is_bool, "size": is_int, "objectsize": is_int, "concurrency": is_int,
        "type": one_of("write", "seq", "rand"), "cleanup": is_bool, "ec_pool": off,
    }
    prepopulate_seconds = 60

    @contextlib.contextmanager
    def run(self, ctx, config):
        require_cluster(ctx, self.name)
        config = config or {}
        pool = config.get("pool", "data")
        created = None
        if config.get("create_pool", True):
            if pool == "data":
                pool = ctx.unique_pool()
            create_pool(ctx, pool)
            created = pool
        kind = config.get("type", "write")
        size = ["-b", str(config.get("size", 65536))]
        osize = config.get("objectsize", 65536)
        objectsize = ["-O", str(osize)] if osize else []
        cleanup = [] if config.get("cleanup", True) else ["--no-cleanup"]
        seconds = config.get("time", 360)
        bg = Background(ctx, "radosbench", seconds * 30 + 300)
        env = ctx.client_env()
        for client in clients_in(ctx, config.get("clients")):
            name = ["--name", client]
            if kind != "write":
                rc = ctx.run(["rados"] + name + ["-p", pool, "bench", str(self.prepopulate_seconds), "write",
                                                 "--no-cleanup"] + size + objectsize,
                             env, self.prepopulate_seconds * 10 + 300, "radosbench prepopulate")
                if rc != 0:
                    raise TaskFailed("radosbench prepopulate write exited %d" % rc)
            # rados bench takes the sizes for write runs only
            bg.start(["rados"] + name + ["-p", pool, "bench", str(seconds), kind,
                                         "-t", str(config.get("concurrency", 16))]
                     + (size + objectsize + cleanup if kind == "write" else []), env)
        ok = False
        try:
            yield
            ok = True
        finally:
            bg.join(abandon=not ok)
            if created and ok:
                remove_pool(ctx, created)


def test_rados_binary():
    """Ceph's model-checking client: $HS_TEST_RADOS, $CEPH_BUILD/bin/ceph_test_rados,
    or the one on PATH (Debian's ceph-test package); None when there is none."""
    given = os.environ.get("HS_TEST_RADOS")
    if given:
        return given if os.access(given, os.X_OK) else None
    build = os.environ.get("CEPH_BUILD")
    if build:
        built = os.path.join(build, "bin", "ceph_test_rados")
        if os.access(built, os.X_OK):
            return built
    return shutil.which("ceph_test_rados")


class Rados(Task):
    """Ceph's rados task. With ceph_test_rados (test_rados_binary) it runs as
    teuthology runs it: every op weight, pool snapshots, EC pools with or
    without overwrites. Without it, the ops that need no snapshot go through
    qa/workunits/hybridstore/rados-model.py (reads, writes, appends, deletes,
    xattrs checked against a Python model); a job asking for more is skipped."""
    name = "rados"
    model_ops = ("read", "write", "append", "delete", "setattr", "rmattr")
    # ceph_test_rados's op names (src/test/osd/TestRados.cc) that need no
    # cache tier or manifest pool beside the tested one.
    binary_ops = ("read", "write", "write_excl", "writesame", "delete", "append", "append_excl",
                  "snap_create", "snap_remove", "rollback", "setattr", "rmattr", "watch", "copy_from")
    common_options = {
        "clients": is_list_of_str, "ops": is_int, "objects": is_int, "max_in_flight": is_int,
        "op_weights": lambda v: isinstance(v, dict), "size": is_int, "object_size": is_int,
        "min_stride_size": is_int, "max_stride_size": is_int, "max_seconds": is_number, "pools": ANY,
        "runs": is_int, "write_append_excl": is_bool,
    }
    model_options = dict(common_options, ec_pool=off, pool_snaps=off, write_fadvise_dontneed=off,
                         fast_read=off, balance_reads=off, localize_reads=off, set_chunk=off,
                         erasure_code_use_overwrites=off, min_size=ANY)
    binary_options = dict(common_options, ec_pool=is_bool, erasure_code_use_overwrites=is_bool,
                          erasure_code_profile=lambda v: isinstance(v, dict), min_size=is_int,
                          pool_snaps=is_bool, write_fadvise_dontneed=is_bool, fast_read=is_bool,
                          balance_reads=is_bool, localize_reads=is_bool, set_chunk=off)
    model = os.path.join(QA_DIR, "workunits", "hybridstore", "rados-model.py")

    def __init__(self, binary=None):
        self.binary = binary

    @property
    def options(self):
        return self.binary_options if self.binary else self.model_options

    def unsupported(self, config, job_config):
        reason = super().unsupported(config, job_config)
        if reason:
            if not self.binary:
                reason += " (without ceph_test_rados: install ceph-test or set CEPH_BUILD)"
            return reason
        weights = (config or {}).get("op_weights") or {}
        known = self.binary_ops if self.binary else self.model_ops
        extra = sorted(op for op, w in weights.items() if w and op not in known)
        if extra:
            why = "" if self.binary else " (without ceph_test_rados: install ceph-test or set CEPH_BUILD)"
            return "unsupported op_weights of task rados: %s%s" % (", ".join(extra), why)
        pools = (config or {}).get("pools")
        if pools is not None and not (isinstance(pools, list) and len(pools) == 1):
            return "task rados: pools must list one pool"
        if pools is not None and (config or {}).get("ec_pool"):
            return "task rados: ec_pool makes its own pool; pools must not be given"
        return None

    @staticmethod
    def object_size(config):
        return config.get("object_size", config.get("size", 4000000))

    def binary_args(self, config, pool):
        """ceph_test_rados's command line for the task's config, as Ceph's
        qa/tasks/rados.py builds it (the exclusive variants of write and
        append take half of their weight unless write_append_excl is off)."""
        size = self.object_size(config)
        argv = [self.binary]
        if config.get("ec_pool"):
            argv.append("--no-omap")
            if not config.get("erasure_code_use_overwrites"):
                argv.append("--ec-pool")
        for flag, opt in (("pool_snaps", "--pool-snaps"), ("write_fadvise_dontneed", "--write-fadvise-dontneed"),
                          ("balance_reads", "--balance-reads"), ("localize_reads", "--localize-reads")):
            if config.get(flag):
                argv.append(opt)
        argv += ["--max-ops", str(config.get("ops", 10000)), "--objects", str(config.get("objects", 500)),
                 "--max-in-flight", str(config.get("max_in_flight", 16)), "--size", str(size),
                 "--min-stride-size", str(config.get("min_stride_size", size // 10)),
                 "--max-stride-size", str(config.get("max_stride_size", size // 5)),
                 "--max-seconds", str(config.get("max_seconds", 0))]
        weights = dict(config.get("op_weights") or {"read": 100, "write": 100, "delete": 10})
        if config.get("write_append_excl", True):
            for op in ("write", "append"):
                if weights.get(op):
                    weights[op] //= 2
                    weights[op + "_excl"] = weights[op]
        for op in sorted(weights):
            if weights[op]:
                argv += ["--op", op, str(weights[op])]
        return argv + ["--pool", pool]

    def make_pool(self, ctx, config):
        """The pool the task creates when the job names none: replicated, or
        EC with the job's profile (overwrites allowed when asked)."""
        pool = ctx.unique_pool()
        try:
            if config.get("ec_pool"):
                profile = dict(config.get("erasure_code_profile") or {})
                name = str(profile.pop("name", "teuthologyprofile"))
                profile.setdefault("k", 2)
                profile.setdefault("m", 1)
                profile.setdefault("crush-failure-domain", "osd")
                ctx.cluster.ceph("osd", "erasure-code-profile", "set", name,
                                 *("%s=%s" % kv for kv in sorted(profile.items())))
                ctx.cluster.ceph("osd", "pool", "create", pool, "16", "16", "erasure", name)
                ctx.cluster.ceph("osd", "pool", "application", "enable", pool, "rados")
                if config.get("erasure_code_use_overwrites"):
                    ctx.cluster.ceph("osd", "pool", "set", pool, "allow_ec_overwrites", "true")
                if config.get("fast_read"):
                    ctx.cluster.ceph("osd", "pool", "set", pool, "fast_read", "1")
            else:
                create_pool(ctx, pool)
            if config.get("min_size"):
                ctx.cluster.ceph("osd", "pool", "set", pool, "min_size", str(config["min_size"]))
        except HelperError as e:
            raise TaskFailed("pool %s: %s" % (pool, e))
        return pool

    def model_args(self, config, pool, python):
        weights = config.get("op_weights") or {"read": 100, "write": 100, "delete": 10}
        size = self.object_size(config)
        return [python, self.model, "--pool", pool,
                "--ops", str(config.get("ops", 100)), "--objects", str(config.get("objects", 50)),
                "--threads", str(config.get("max_in_flight", 16)),
                "--weights", ",".join("%s=%d" % kv for kv in sorted(weights.items())),
                "--max-size", str(size),
                "--min-stride", str(config.get("min_stride_size", max(1, size // 10))),
                "--max-stride", str(config.get("max_stride_size", max(1, size // 5))),
                "--max-seconds", str(config.get("max_seconds", 0))]

    @contextlib.contextmanager
    def run(self, ctx, config):
        require_cluster(ctx, self.name)
        config = config or {}
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
        if not self.binary and subprocess.run([python, "-c", "import rados"],
                                              stderr=subprocess.DEVNULL).returncode != 0:
            raise TaskFailed("%s cannot import rados (install python3-rados)" % python)
        pools = config.get("pools") or [None]
        pool = pools[0]
        created = None
        if pool is None:
            pool = created = self.make_pool(ctx, config)
        ctx.note("rados: %s" % ("ceph_test_rados " + self.binary if self.binary else
                                "the Python model (no ceph_test_rados)"))
        bg = Background(ctx, "rados", 3 * 3600)
        for run in range(config.get("runs", 1)):
            for client in clients_in(ctx, config.get("clients")):
                if self.binary:
                    argv = self.binary_args(config, pool)
                else:
                    seed = ctx.seed * 100 + run
                    argv = self.model_args(config, pool, python) + [
                        "--seed", str(seed), "--prefix", "%s-run%d" % (client, run)]
                bg.start(argv, ctx.client_env(client))
        ok = False
        try:
            yield
            ok = True
        finally:
            bg.join(abandon=not ok)
            if created and ok:
                remove_pool(ctx, created)


class Thrashosds(Task):
    """OSDs killed with SIGKILL and revived (and marked out and in) while the
    following tasks run; on exit every OSD is revived and marked in, and the
    PGs must be active+clean within `timeout`."""
    name = "thrashosds"
    options = {
        "timeout": is_int, "chance_down": is_number, "min_in": is_int, "min_live": is_int,
        "min_out": is_int, "op_delay": is_number, "seed": is_int,
        # Thrasher features this runner does not have; accepted only when off.
        "chance_pgnum_grow": off, "chance_pgpnum_fix": off, "chance_thrash_cluster_full": off,
        "chance_thrash_pg_upmap": off, "chance_thrash_pg_upmap_items": off,
        "chance_test_map_discontinuity": off, "chance_bluestore_reshard": off,
        "disable_objectstore_tool_tests": is_bool, "ceph_objectstore_tool": off,
        "powercycle": off, "bdev_inject_crash": off, "sighup_delay": off, "optrack_toggle_delay": off,
        "dump_ops_enable": off, "noscrub_toggle_delay": off, "random_eio": off,
    }

    @contextlib.contextmanager
    def run(self, ctx, config):
        require_cluster(ctx, self.name)
        config = config or {}
        thrasher = Thrasher(ctx.cluster, config, seed=config.get("seed", ctx.seed), say=ctx.say)
        thrasher.start()
        ok = False
        try:
            yield
            ok = True
        finally:
            summary = thrasher.stop_and_recover(config.get("timeout", 360), check=ok)
            ctx.note("thrashosds: %s" % summary)


class Workunit(Task):
    """Scripts under basedir (default qa/workunits) run per client with
    TESTDIR, CEPH_CONF and the task's env; a directory runs every executable
    file in it. A script that exits 77 is skipped (with the reason it printed
    on a 'SKIPPED:' line), which skips the job."""
    name = "workunit"
    options = {
        "clients": lambda v: isinstance(v, dict), "basedir": lambda v: isinstance(v, str),
        "env": lambda v: isinstance(v, dict), "timeout": ANY,
        # the git ref of the workunits in a lab; locally the working tree
        "sha1": ANY, "branch": ANY, "tag": ANY, "refspec": ANY, "cleanup": is_bool,
    }

    @staticmethod
    def scripts(basedir, path):
        full = os.path.join(TOP_DIR, basedir, path)
        if os.path.isdir(full):
            found = []
            for root, _, files in os.walk(full):
                for f in sorted(files):
                    p = os.path.join(root, f)
                    if os.access(p, os.X_OK):
                        found.append(p)
            return sorted(found)
        return [full]

    @contextlib.contextmanager
    def run(self, ctx, config):
        config = config or {}
        basedir = config.get("basedir", "qa/workunits")
        timeout = duration_seconds(config.get("timeout"), 3 * 3600)
        skipped, failed = [], []
        for role, paths in config["clients"].items():
            for client in clients_in(ctx, [role]):
                env = ctx.client_env(client, config.get("env"))
                for path in paths:
                    scripts = self.scripts(basedir, path)
                    if not scripts:
                        raise TaskFailed("workunit %s/%s: no executable scripts" % (basedir, path))
                    for script in scripts:
                        if not os.access(script, os.X_OK):
                            raise TaskFailed("workunit %s is missing or not executable" % script)
                        rel = os.path.relpath(script, TOP_DIR)
                        rel = script if rel.startswith("..") else rel
                        start = self.log_offset(ctx)
                        rc = ctx.run([script], env, timeout, "workunit %s (%s)" % (rel, client))
                        if rc == 77:
                            skipped.append("%s: %s" % (rel, self.skip_reason(ctx, start)))
                        elif rc != 0:
                            failed.append("%s exited %d" % (rel, rc))
        if failed:
            raise TaskFailed("workunit: " + "; ".join(failed))
        if skipped:
            raise TaskSkipped("workunit skipped " + "; ".join(skipped))
        yield

    @staticmethod
    def log_offset(ctx):
        ctx.log.flush()
        return ctx.log.tell()

    @staticmethod
    def skip_reason(ctx, offset):
        ctx.log.flush()
        try:
            with open(ctx.log.name, errors="replace") as f:
                f.seek(offset)
                lines = [ln.strip() for ln in f if ln.startswith("SKIPPED:")]
        except OSError:
            lines = []
        return lines[-1][len("SKIPPED:"):].strip() if lines else "exit 77"


class Exec(Task):
    """Shell lines per role, run with bash -c and the job's TESTDIR."""
    name = "exec"

    def unsupported(self, config, job_config):
        if not isinstance(config, dict):
            return "task exec: config is not a mapping of role to commands"
        roles = set(roles_of(job_config)) | {"all"}
        for role, cmds in config.items():
            if role not in roles and not role.startswith("all"):
                return "task exec: role %s is not in the job" % role
            if not is_list_of_str(cmds):
                return "task exec: commands of %s are not a list of strings" % role
        return None

    @contextlib.contextmanager
    def run(self, ctx, config):
        for role, cmds in config.items():
            env = ctx.client_env(role if role.startswith("client.") else "client.0")
            for cmd in cmds:
                rc = ctx.run(["bash", "-c", cmd], env, 3600, "exec on %s" % role)
                if rc != 0:
                    raise TaskFailed("exec on %s: %r exited %d" % (role, cmd, rc))
        yield


class Sleep(Task):
    name = "sleep"
    options = {"duration": is_number}

    @contextlib.contextmanager
    def run(self, ctx, config):
        time.sleep((config or {}).get("duration", 0))
        yield


class Print(Task):
    name = "print"

    def unsupported(self, config, job_config):
        return None

    @contextlib.contextmanager
    def run(self, ctx, config):
        ctx.say("print: %s" % config)
        yield


TASKS = {t.name: t for t in (Install(), Hybridstore(), Ceph(), RadosBench(), Rados(test_rados_binary()), Thrashosds(),
                             Workunit(), Exec(), Sleep(), Print())}
