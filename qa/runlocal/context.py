"""What a job's tasks share while it runs on this machine."""
import os
import signal
import subprocess
import time

from .suite import TOP_DIR


class TaskSkipped(Exception):
    """The job cannot be completed here; the message says why."""


class TaskFailed(Exception):
    """The job ran and failed; the message says what."""


def roles_of(config):
    return [r for host in config.get("roles") or [] for r in host]


def roles_of_type(config, kind):
    return [r for r in roles_of(config) if r.split(".", 1)[0] == kind]


def osd_knows_hybridstore(ceph_osd):
    """Whether a ceph-osd's option table accepts osd_objectstore=hybridstore
    (Debian's stock binary rejects the value)."""
    if not ceph_osd or not os.access(ceph_osd, os.X_OK):
        return False
    try:
        p = subprocess.run([ceph_osd, "--no-mon-config", "-c", "/dev/null", "--log-file", "/dev/null",
                            "--osd-objectstore", "hybridstore", "--show-config-value", "osd_objectstore"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and p.stdout.strip() == "hybridstore"


class OsdChoice:
    """Which ceph-osd runs which objectstore. `given` is the binary named by
    --ceph-osd, CEPH_OSD or CEPH_BUILD; without one, only the BlueStore
    baseline runs (with ceph-osd from PATH) and hybridstore jobs are skipped."""

    def __init__(self, given=None, stock="/usr/bin/ceph-osd"):
        self.given = given
        self.stock = stock
        self._knows = None

    def knows_hybridstore(self):
        if self._knows is None:
            self._knows = osd_knows_hybridstore(self.given)
        return self._knows

    def skip_reason(self, objectstore):
        """Why a job on `objectstore` cannot start here, or None."""
        if objectstore == "hybridstore":
            if not self.given:
                return ("needs a hybridstore-capable ceph-osd: none given "
                        "(--ceph-osd, CEPH_OSD=/path/to/ceph-osd or CEPH_BUILD=dir)")
            return None
        if objectstore == "bluestore":
            if not (self.given or (self.stock and os.access(self.stock, os.X_OK))):
                return "no ceph-osd for the bluestore baseline"
            return None
        return "objectstore %s is not run by the local runner" % objectstore

    def binary_for(self, objectstore):
        """The ceph-osd for a job, or TaskFailed when the given one cannot
        run hybridstore (a configuration error, not a skip)."""
        reason = self.skip_reason(objectstore)
        if reason:
            raise TaskSkipped(reason)
        if objectstore == "hybridstore":
            if not os.access(self.given, os.X_OK):
                raise TaskFailed("ceph-osd %s does not exist or is not executable" % self.given)
            if not self.knows_hybridstore():
                raise TaskFailed("ceph-osd %s does not know osd_objectstore=hybridstore" % self.given)
            return self.given
        return self.given or self.stock


class JobContext:
    def __init__(self, job, workdir, archive, osd_choice, devices_override, seed, log):
        self.job = job
        self.config = job.config
        self.workdir = workdir
        self.archive = archive
        self.osd_choice = osd_choice
        self.devices_override = devices_override
        self.devices = devices_override or "file"
        self.seed = seed
        self.log = log             # open file: the job's log
        self.cluster = None
        self.objectstore = None
        self.ceph_osd = None
        self.notes = []
        self.pool_counter = 0
        self.testdir = os.path.join(workdir, "testdir")
        os.makedirs(os.path.join(self.testdir, "archive"), exist_ok=True)

    def say(self, text):
        self.log.write("runlocal %s: %s\n" % (time.strftime("%H:%M:%S"), text))
        self.log.flush()

    def note(self, text):
        self.notes.append(text)
        self.say(text)

    def unique_pool(self):
        self.pool_counter += 1
        return "unique_pool_%d" % self.pool_counter

    def client_env(self, role="client.0", extra=None):
        """The environment of a workunit or exec command, as teuthology sets
        it up, pointing at this job's cluster."""
        env = dict(os.environ)
        env.update({
            "TESTDIR": self.testdir,
            "CEPH_BASE": TOP_DIR,
            "CEPH_ROOT": TOP_DIR,
            "CEPH_ID": role.split(".", 1)[1] if "." in role else "0",
            "PATH": env.get("PATH", "") + ":/usr/sbin:/sbin",
        })
        env.pop("CEPH_CONF", None)
        if self.cluster:
            env["CEPH_CONF"] = self.cluster.env["CEPH_CONF"]
        if self.osd_choice.given:
            env["CEPH_OSD"] = self.osd_choice.given
        for k, v in (extra or {}).items():
            env[str(k)] = str(v)
        return env

    def run(self, argv, env, timeout, what, cwd=None):
        """Runs a client command with its output in the job log; returns the
        exit status (TaskFailed on timeout)."""
        self.say("%s: %s" % (what, " ".join(argv)))
        p = spawn(argv, env, self.log, cwd or self.testdir)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(p)
            raise TaskFailed("%s timed out after %ds" % (what, timeout))
        except BaseException:  # interrupted: the command must not outlive the job
            stop_group(p, grace=30)
            raise


def spawn(argv, env, log, cwd):
    """A command in its own process group (so a timeout can stop all of it)."""
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                            start_new_session=True)


def stop_group(p, grace=120):
    """TERM to the command's process group (scripts then stop their daemons
    by pid file in their traps), KILL after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 30)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
