"""A kill/revive OSD thrasher for one-machine clusters.

Every `op_delay` seconds it takes one action, chosen with a seeded random
generator so a run can be repeated:
  - revive a dead OSD (always, if fewer than `min_live` are alive);
  - kill a live OSD with SIGKILL (with probability `chance_down`, while more
    than `min_live` are alive);
  - otherwise mark an OSD out (while more than `min_in` are in) or back in.
On stop it revives every OSD, marks every OSD in and waits for active+clean.
"""
import random
import threading

from .cluster import HelperError
from .context import TaskFailed


class Thrasher:
    def __init__(self, cluster, config, seed=0, say=print):
        self.cluster = cluster
        self.rng = random.Random(seed)
        self.chance_down = float(config.get("chance_down", 0.4))
        self.min_in = int(config.get("min_in", 1))
        self.min_live = int(config.get("min_live", 1))
        self.min_out = int(config.get("min_out", 0))
        self.op_delay = float(config.get("op_delay", 5))
        self.say = say
        self.live = set(cluster.osds)
        self.dead = set()
        self.in_osds = set(cluster.osds)
        self.out_osds = set()
        self.counts = {"killed": 0, "revived": 0, "out": 0, "in": 0}
        self.error = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="thrasher", daemon=True)

    def start(self):
        self.thread.start()

    def choose(self):
        """The next action as (verb, osd), or None; pure, for tests."""
        if self.dead and (len(self.live) < self.min_live or self.rng.random() < 0.5):
            return ("revive", self.rng.choice(sorted(self.dead)))
        if len(self.live) > self.min_live and self.rng.random() < self.chance_down:
            return ("kill", self.rng.choice(sorted(self.live)))
        if self.out_osds and (len(self.in_osds) <= self.min_in or len(self.out_osds) > self.min_out
                              and self.rng.random() < 0.5):
            return ("in", self.rng.choice(sorted(self.out_osds)))
        if len(self.in_osds) > self.min_in:
            return ("out", self.rng.choice(sorted(self.in_osds)))
        if self.out_osds:
            return ("in", self.rng.choice(sorted(self.out_osds)))
        return None

    def apply(self, action):
        verb, osd = action
        self.say("thrasher: %s osd.%d" % (verb, osd))
        if verb == "kill":
            self.cluster.kill_osd(osd, "KILL")
            self.live.discard(osd)
            self.dead.add(osd)
            self.counts["killed"] += 1
        elif verb == "revive":
            self.cluster.revive_osd(osd)
            self.dead.discard(osd)
            self.live.add(osd)
            self.counts["revived"] += 1
        elif verb == "out":
            self.cluster.ceph("osd", "out", str(osd))
            self.in_osds.discard(osd)
            self.out_osds.add(osd)
            self.counts["out"] += 1
        elif verb == "in":
            self.cluster.ceph("osd", "in", str(osd))
            self.out_osds.discard(osd)
            self.in_osds.add(osd)
            self.counts["in"] += 1

    def loop(self):
        try:
            while not self.stopping.wait(self.op_delay):
                action = self.choose()
                if action:
                    self.apply(action)
        except (HelperError, OSError) as e:
            self.error = "thrasher: %s" % e

    def stop_and_recover(self, timeout, check=True):
        """Stops thrashing, brings every OSD back, waits for clean PGs.
        Raises TaskFailed if the thrasher failed or recovery timed out (when
        check is set; after a failed job it only restores)."""
        self.stopping.set()
        self.thread.join(timeout=900)
        problems = [self.error] if self.error else []
        if self.thread.is_alive():
            problems.append("thrasher thread did not stop")
        for osd in sorted(self.dead):
            try:
                self.apply(("revive", osd))
            except HelperError as e:
                problems.append("revive osd.%d: %s" % (osd, e))
        for osd in sorted(self.out_osds):
            try:
                self.apply(("in", osd))
            except HelperError as e:
                problems.append("in osd.%d: %s" % (osd, e))
        if check and not problems:
            try:
                self.cluster.wait_for_clean(timeout)
            except HelperError as e:
                problems.append("not clean %ds after thrashing: %s" % (timeout, e))
        summary = ", ".join("%s %d" % kv for kv in self.counts.items())
        if check and not problems and not any(self.counts.values()):
            problems.append("no OSD was thrashed: the workload ended within op_delay (%gs)" % self.op_delay)
        if check and problems:
            raise TaskFailed("; ".join(problems) + " (" + summary + ")")
        return summary
