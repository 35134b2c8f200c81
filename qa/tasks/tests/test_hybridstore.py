"""Unit tests of qa/tasks/hybridstore.py: its pure logic, and the task run
against a fake teuthology context (no lab needed)."""
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hybridstore  # noqa: E402  (qa/tasks on the path, as teuthology puts it)


class PureLogic(unittest.TestCase):
    def test_objectstore_from_osd_or_global_section(self):
        self.assertEqual(hybridstore.objectstore_of({}), "bluestore")
        self.assertEqual(hybridstore.objectstore_of(
            {"ceph": {"conf": {"osd": {"osd objectstore": "hybridstore"}}}}), "hybridstore")
        self.assertEqual(hybridstore.objectstore_of(
            {"ceph": {"conf": {"global": {"osd_objectstore": "hybridstore"}}}}), "hybridstore")

    def test_sizes(self):
        self.assertEqual(hybridstore.parse_size("512M"), 512 << 20)
        self.assertEqual(hybridstore.parse_size("2G"), 2 << 30)
        self.assertEqual(hybridstore.parse_size(4096), 4096)
        with self.assertRaises(ValueError):
            hybridstore.parse_size("lots")

    def test_osd_ids_with_and_without_cluster_prefix(self):
        self.assertEqual(hybridstore.osd_ids(["mon.a", "osd.2", "ceph.osd.0", "client.0"]), [0, 2])

    def test_scratch_pairs_one_ssd_and_one_hdd_per_osd(self):
        rot = {"/dev/sdb": True, "/dev/nvme0n1": False, "/dev/sdc": True, "/dev/nvme1n1": False}
        pairs = hybridstore.pair_devices([0, 1], sorted(rot), rot)
        self.assertEqual(pairs, {0: ("/dev/nvme0n1", "/dev/sdb"), 1: ("/dev/nvme1n1", "/dev/sdc")})

    def test_scratch_pairs_refuse_too_few_ssds(self):
        rot = {"/dev/sdb": True, "/dev/sdc": True}
        with self.assertRaisesRegex(ValueError, "need 1 SSDs"):
            hybridstore.pair_devices([0], sorted(rot), rot)

    def test_loop_plan_and_conf(self):
        plan = hybridstore.loop_plan([0], "/t", "1G", "4G")
        self.assertEqual(plan, [(0, "ssd", "/t/hybridstore-osd.0.ssd.img", 1 << 30, 0),
                                (0, "hdd", "/t/hybridstore-osd.0.hdd.img", 4 << 30, 1)])
        self.assertEqual(hybridstore.device_conf({0: ("/dev/loop0", "/dev/loop1")}),
                         {"osd.0": {"hybridstore ssd path": "/dev/loop0", "hybridstore hdd path": "/dev/loop1"}})


class FakeRemote:
    shortname = "node1"

    def __init__(self):
        self.commands = []
        self.next_loop = 0

    def run(self, args, check_status=True):
        self.commands.append(args)

    def sh(self, args):
        self.commands.append(args)
        self.next_loop += 1
        return "/dev/loop%d\n" % (self.next_loop - 1)


def fake_ctx(objectstore, remote, devices=None):
    overrides = {"ceph": {"conf": {"osd": {"osd objectstore": objectstore, "hybridstore ssd size": "1G"}}}}
    if devices:
        overrides["hybridstore"] = {"devices": devices}
    cluster = mock.Mock()
    cluster.only.return_value.remotes = {remote: ["mon.a", "osd.0", "osd.1", "client.0"]}
    return mock.Mock(config={"overrides": overrides}, cluster=cluster)


class TaskRun(unittest.TestCase):
    def test_not_hybridstore_is_a_no_op(self):
        remote = FakeRemote()
        ctx = fake_ctx("bluestore", remote, devices="loop")
        with hybridstore.task(ctx, {}):
            pass
        self.assertEqual(remote.commands, [])

    def test_loop_devices_written_to_conf_and_detached(self):
        remote = FakeRemote()
        ctx = fake_ctx("hybridstore", remote, devices="loop")
        with mock.patch.object(hybridstore.misc, "get_testdir", return_value="/home/ubuntu/cephtest"):
            with hybridstore.task(ctx, None):
                conf = ctx.config["overrides"]["ceph"]["conf"]
                self.assertEqual(conf["osd.0"], {"hybridstore ssd path": "/dev/loop0",
                                                 "hybridstore hdd path": "/dev/loop1"})
                self.assertEqual(conf["osd.1"]["hybridstore ssd path"], "/dev/loop2")
        truncates = [c for c in remote.commands if c[:2] == ["sudo", "truncate"]]
        self.assertEqual(truncates[0], ["sudo", "truncate", "-s", str(1 << 30),
                                        "/home/ubuntu/cephtest/hybridstore-osd.0.ssd.img"])
        self.assertEqual(truncates[1][3], str(8 << 30))  # the default HDD size
        rotational = [c for c in remote.commands if c[:2] == ["sudo", "sh"]]
        self.assertIn("echo 0 > /sys/block/loop0/queue/rotational", rotational[0][3])
        detached = [c[3] for c in remote.commands if c[:3] == ["sudo", "losetup", "-d"]]
        self.assertEqual(sorted(detached), ["/dev/loop0", "/dev/loop1", "/dev/loop2", "/dev/loop3"])

    def test_file_mode_provisions_nothing(self):
        remote = FakeRemote()
        ctx = fake_ctx("hybridstore", remote)
        with hybridstore.task(ctx, {}):
            self.assertNotIn("osd.0", ctx.config["overrides"]["ceph"]["conf"])
        self.assertEqual(remote.commands, [])

    def test_unknown_mode_is_refused(self):
        ctx = fake_ctx("hybridstore", FakeRemote(), devices="ramdisk")
        with self.assertRaises(ValueError):
            with hybridstore.task(ctx, {}):
                pass


if __name__ == "__main__":
    unittest.main()
