"""Unit tests of the local runner: job selection, overrides, the honest
skipping of what it cannot run, conf rendering, the thrasher's choices, and
whole jobs of a throwaway suite that need no cluster."""
import io
import os
import shutil
import tempfile
import unittest
from unittest import mock

from runlocal import runner, suite, tasks
from runlocal.cluster import conf_get, conf_lines
from runlocal.context import OsdChoice, TaskFailed, TaskSkipped
from runlocal.suite import Job
from runlocal.thrasher import Thrasher


def job(config, index=0):
    return Job(index, "test/{job}", [], config)


ROLES = [["mon.a", "mgr.x", "osd.0", "osd.1", "client.0"]]


class Selection(unittest.TestCase):
    def test_subset_parsing(self):
        self.assertEqual(suite.parse_subset("1/4"), (1, 4))
        self.assertIsNone(suite.parse_subset(None))
        for bad in ("4/4", "1", "a/b", "0/0"):
            with self.assertRaises(ValueError):
                suite.parse_subset(bad)

    def test_filters_like_teuthology(self):
        desc, paths = "s/{objectstore/bluestore tasks/put-get}", ["/q/tasks/put-get.yaml"]
        self.assertTrue(suite.matches(desc, paths, ["bluestore", "omap"]))
        self.assertFalse(suite.matches(desc, paths, ["bluestore", "omap"], every=True))
        self.assertTrue(suite.matches(desc, paths, ["put-get.yaml"]))
        self.assertEqual(suite.split_words(" a, b,,"), ["a", "b"])


class Overrides(unittest.TestCase):
    def test_deep_merge_appends_lists_and_overrides_scalars(self):
        a = {"conf": {"osd": {"x": 1}}, "log-ignorelist": ["a"]}
        runner.deep_merge(a, {"conf": {"osd": {"x": 2, "y": 3}}, "log-ignorelist": ["b"]})
        self.assertEqual(a, {"conf": {"osd": {"x": 2, "y": 3}}, "log-ignorelist": ["a", "b"]})

    def test_task_config_gets_its_overrides(self):
        cfg = {"tasks": [{"ceph": None}, {"exec": {"client.0": ["true"]}}],
               "overrides": {"ceph": {"conf": {"osd": {"osd objectstore": "hybridstore"}}}}}
        name, merged = runner.job_tasks(cfg)[0]
        self.assertEqual(name, "ceph")
        self.assertEqual(tasks.Ceph.objectstore_of(merged), "hybridstore")

    def test_malformed_task_entry(self):
        with self.assertRaises(ValueError):
            runner.job_tasks({"tasks": [{"a": 1, "b": 2}]})


class HonestSkips(unittest.TestCase):
    none_given = OsdChoice(None, stock="/bin/true")

    def reason(self, config):
        return runner.skip_reason(job(dict(config, roles=ROLES)), self.none_given)

    def test_unknown_task(self):
        self.assertEqual(self.reason({"tasks": [{"rgw": None}]}), "unsupported task rgw")

    def test_unknown_option(self):
        self.assertEqual(self.reason({"tasks": [{"radosbench": {"clients": ["client.0"], "warp": 9}}]}),
                         "unsupported option warp of task radosbench")

    def test_feature_the_thrasher_lacks_is_accepted_only_when_off(self):
        self.assertIsNone(self.reason({"tasks": [{"thrashosds": {"chance_pgnum_grow": 0}}]}))
        self.assertIn("unsupported value chance_pgnum_grow=1",
                      self.reason({"tasks": [{"thrashosds": {"chance_pgnum_grow": 1}}]}))

    def test_rados_ops_that_need_snapshots(self):
        # Without ceph_test_rados only the Python model's ops run; the job
        # that needs more is skipped and says what would run it.
        with mock.patch.dict(tasks.TASKS, {"rados": tasks.Rados(None)}):
            r = self.reason({"tasks": [{"rados": {"op_weights": {"read": 1, "snap_create": 1}}}]})
            self.assertEqual(r, "unsupported op_weights of task rados: snap_create "
                                "(without ceph_test_rados: install ceph-test or set CEPH_BUILD)")
            self.assertIn("unsupported value ec_pool=True",
                          self.reason({"tasks": [{"rados": {"ec_pool": True}}]}))

    def test_rados_with_the_binary_takes_what_teuthology_does(self):
        with mock.patch.dict(tasks.TASKS, {"rados": tasks.Rados("/opt/ceph/bin/ceph_test_rados")}):
            cfg = {"op_weights": {"read": 100, "snap_create": 50, "rollback": 50, "copy_from": 50},
                   "ec_pool": True, "erasure_code_use_overwrites": True, "min_size": 2,
                   "erasure_code_profile": {"name": "p", "k": 2, "m": 1}, "object_size": 16384}
            self.assertIsNone(self.reason({"tasks": [{"rados": cfg}]}))
            # A cache tier's ops need a second pool this task does not make.
            self.assertEqual(self.reason({"tasks": [{"rados": {"op_weights": {"cache_flush": 1}}}]}),
                             "unsupported op_weights of task rados: cache_flush")



    def test_hybridstore_job_needs_a_given_ceph_osd(self):
        cfg = {"tasks": [{"ceph": {"conf": {"osd": {"osd objectstore": "hybridstore"}}}}]}
        self.assertIn("needs a hybridstore-capable ceph-osd", self.reason(cfg))
        given = OsdChoice("/opt/ceph/bin/ceph-osd")
        self.assertIsNone(runner.skip_reason(job(dict(cfg, roles=ROLES)), given))

    def test_bluestore_baseline_runs_with_the_stock_osd(self):
        self.assertIsNone(self.reason({"tasks": [{"ceph": None}]}))

    def test_two_monitors(self):
        cfg = {"roles": [["mon.a", "osd.0"], ["mon.b", "client.0"]], "tasks": [{"ceph": None}]}
        self.assertEqual(runner.skip_reason(job(cfg), self.none_given), "2 monitors; the local runner starts one")

    def test_a_given_osd_that_lacks_hybridstore_fails_instead_of_passing(self):
        choice = OsdChoice("/bin/true")
        with self.assertRaisesRegex(TaskFailed, "does not know osd_objectstore=hybridstore"):
            choice.binary_for("hybridstore")
        with self.assertRaises(TaskSkipped):
            OsdChoice(None).binary_for("hybridstore")


class RadosArgs(unittest.TestCase):
    binary = "/opt/ceph/bin/ceph_test_rados"

    def args(self, config):
        return tasks.Rados(self.binary).binary_args(config, "p1")

    @staticmethod
    def weights(argv):
        return {argv[i + 1]: int(argv[i + 2]) for i, a in enumerate(argv) if a == "--op"}

    def test_exclusive_variants_take_half_as_rados_py_does(self):
        argv = self.args({"op_weights": {"read": 100, "write": 100, "append": 50, "delete": 10},
                          "object_size": 16384, "min_stride_size": 1638, "max_stride_size": 3276})
        self.assertEqual(self.weights(argv), {"read": 100, "write": 50, "write_excl": 50,
                                              "append": 25, "append_excl": 25, "delete": 10})
        self.assertEqual(argv[argv.index("--size") + 1], "16384")
        self.assertEqual(argv[argv.index("--min-stride-size") + 1], "1638")
        self.assertEqual(argv[-2:], ["--pool", "p1"])

    def test_write_append_excl_off(self):
        argv = self.args({"op_weights": {"write": 10}, "write_append_excl": False})
        self.assertEqual(self.weights(argv), {"write": 10})

    def test_ec_pool_flags(self):
        plain = self.args({"ec_pool": True})
        self.assertIn("--ec-pool", plain)
        self.assertIn("--no-omap", plain)
        over = self.args({"ec_pool": True, "erasure_code_use_overwrites": True})
        self.assertNotIn("--ec-pool", over)
        self.assertIn("--no-omap", over)
        self.assertLess(over.index("--no-omap"), over.index("--op"))

    def test_size_is_an_alias_of_object_size(self):
        argv = self.args({"size": 65536})
        self.assertEqual(argv[argv.index("--size") + 1], "65536")
        self.assertEqual(argv[argv.index("--max-stride-size") + 1], str(65536 // 5))

    def test_binary_found_from_the_environment(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "bin"))
            exe = os.path.join(d, "bin", "ceph_test_rados")
            with open(exe, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(exe, 0o755)
            with mock.patch.dict(os.environ, {"CEPH_BUILD": d}, clear=False):
                os.environ.pop("HS_TEST_RADOS", None)
                self.assertEqual(tasks.test_rados_binary(), exe)
            with mock.patch.dict(os.environ, {"HS_TEST_RADOS": os.path.join(d, "missing")}):
                self.assertIsNone(tasks.test_rados_binary())

class Conf(unittest.TestCase):
    def test_lines_and_lookup(self):
        conf = {"osd": {"osd objectstore": "hybridstore", "hybridstore fsck on mount": True,
                        "osd failsafe full ratio": .95}}
        self.assertEqual(conf_lines(conf), ["osd\tosd objectstore\thybridstore\n",
                                            "osd\thybridstore fsck on mount\ttrue\n",
                                            "osd\tosd failsafe full ratio\t0.95\n"])
        self.assertEqual(conf_get(conf, "osd", "osd_objectstore"), "hybridstore")
        self.assertEqual(conf_get(conf, "mon", "x", "d"), "d")

    def test_device_sizes_follow_the_fragment(self):
        conf = {"osd": {"hybridstore ssd size": "512M", "hybridstore hdd size": "8G"}}
        self.assertEqual(tasks.Ceph.device_sizes(conf, "hybridstore"), ("512M", "8G"))

    def test_cluster_log_check_honours_the_ignorelist(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(os.path.join(d, "cluster.log"), "w") as f:
            f.write("x cluster [WRN] Health check failed: 1 osds down (OSD_DOWN)\n"
                    "x cluster [INF] fine\n")
        self.assertIn("OSD_DOWN", tasks.Ceph.first_log_error(d, {}))
        self.assertIsNone(tasks.Ceph.first_log_error(d, {"log-ignorelist": [r"\(OSD_"]}))

    def test_durations(self):
        self.assertEqual(tasks.duration_seconds("3h", 0), 10800)
        self.assertEqual(tasks.duration_seconds(None, 7), 7)
        self.assertEqual(tasks.duration_seconds("90", 0), 90)


class FakeCluster:
    def __init__(self, n):
        self.osds = list(range(n))
        self.calls = []

    def kill_osd(self, osd, sig):
        self.calls.append(("kill", osd))

    def revive_osd(self, osd):
        self.calls.append(("revive", osd))

    def ceph(self, *args):
        self.calls.append(args)

    def wait_for_clean(self, timeout):
        self.calls.append(("clean", timeout))


class ThrasherChoices(unittest.TestCase):
    def test_never_below_min_live_or_min_in_and_deterministic(self):
        runs = []
        for _ in range(2):
            t = Thrasher(FakeCluster(3), {"chance_down": 0.7, "min_live": 2, "min_in": 2}, seed=5, say=lambda s: None)
            seq = []
            for _ in range(200):
                action = t.choose()
                t.apply(action)
                seq.append(action)
                self.assertGreaterEqual(len(t.live), 2)
                self.assertGreaterEqual(len(t.in_osds), 2)
            runs.append(seq)
        self.assertEqual(runs[0], runs[1])
        self.assertGreater(runs[0].count(("kill", 0)) + runs[0].count(("kill", 1)), 0)

    def test_stop_revives_everything_and_waits_for_clean(self):
        cluster = FakeCluster(3)
        t = Thrasher(cluster, {"min_live": 1}, say=lambda s: None)
        t.apply(("kill", 1))
        t.apply(("out", 2))
        t.start()
        summary = t.stop_and_recover(77)
        self.assertEqual(t.dead, set())
        self.assertEqual(t.out_osds, set())
        self.assertEqual(cluster.calls[-1], ("clean", 77))
        self.assertIn("killed 1", summary)

    def test_a_thrasher_that_did_nothing_fails(self):
        t = Thrasher(FakeCluster(3), {"op_delay": 60}, say=lambda s: None)
        t.start()
        with self.assertRaisesRegex(TaskFailed, "no OSD was thrashed"):
            t.stop_and_recover(10)


class WholeJobs(unittest.TestCase):
    """A throwaway suite of exec and workunit jobs, run by the real runner."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        s = os.path.join(self.dir, "suite")
        os.makedirs(os.path.join(s, "tasks"))
        open(os.path.join(s, "%"), "w").close()
        with open(os.path.join(s, "roles.yaml"), "w") as f:
            f.write("roles:\n- [mon.a, osd.0, client.0]\n")
        # Job names hold a '-', which tempfile's random names never do: a
        # filter matches fragment paths too (as teuthology's does), and a
        # plain word like "ok" turned up in the temporary directory's name
        # now and then, selecting every job.
        jobs = {"exec-ok": "- exec:\n    client.0:\n    - test -d \"$TESTDIR\"\n",
                "fails": "- exec:\n    client.0:\n    - exit 3\n",
                "unsupported": "- rgw:\n",
                "skips": "- exec:\n    client.0:\n    - 'true'\n- workunit:\n    basedir: %s\n"
                         "    clients:\n      client.0: [skip.sh]\n" % self.dir}
        for name, body in jobs.items():
            with open(os.path.join(s, "tasks", name + ".yaml"), "w") as f:
                f.write("tasks:\n" + body)
        with open(os.path.join(self.dir, "skip.sh"), "w") as f:
            f.write("#!/bin/sh\necho 'SKIPPED: skip.sh: nothing to test here'\nexit 77\n")
        os.chmod(os.path.join(self.dir, "skip.sh"), 0o755)
        self.suite = s

    def run_suite(self, *extra):
        out = io.StringIO()
        with mock.patch("sys.stdout", out):
            rc = runner.main([self.suite, "--archive", os.path.join(self.dir, "archive")] + list(extra))
        return rc, out.getvalue()

    def test_summary_and_exit_status(self):
        rc, out = self.run_suite()
        self.assertEqual(rc, 1)
        self.assertIn("4 jobs: 1 passed, 1 failed, 2 skipped", out)
        self.assertIn("unsupported task rgw", out)
        self.assertIn("exit 3", out)
        self.assertIn("workunit skipped", out)
        self.assertIn("nothing to test here", out)

    def test_filter_and_subset(self):
        rc, out = self.run_suite("--filter", "exec-ok")
        self.assertEqual(rc, 0)
        self.assertIn("1 jobs: 1 passed, 0 failed, 0 skipped", out)
        seen = set()
        for i in range(2):
            rc, out = self.run_suite("--subset", "%d/2" % i, "--list")
            seen.update(line.split("tasks/")[1].split("}")[0] for line in out.splitlines() if "tasks/" in line)
        self.assertEqual(seen, {"exec-ok", "fails", "unsupported", "skips"})


if __name__ == "__main__":
    unittest.main()
