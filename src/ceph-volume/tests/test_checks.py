"""The refusals before anything changes (checks.py)."""
import errno
import os
import stat

import pytest

from ceph_volume_hybridstore import checks
from conftest import label

OSD = '11111111-2222-3333-4444-555555555555'


class TestCheckPair(object):
    def test_good_pair(self, fake_process, devices, no_bluestore):
        ssd, hdd = devices
        checks.check_pair(ssd, hdd)

    def test_missing_ssd(self, fake_process, devices, no_bluestore):
        with pytest.raises(checks.Refused, match='needs --block.ssd SSD'):
            checks.check_pair(None, devices[1])

    def test_missing_hdd(self, fake_process, devices, no_bluestore):
        with pytest.raises(checks.Refused, match='needs --data HDD'):
            checks.check_pair(devices[0], '')

    def test_device_that_does_not_exist(self, fake_process, devices, no_bluestore):
        with pytest.raises(checks.Refused, match='--block.ssd /nonexistent does not exist'):
            checks.check_pair('/nonexistent', devices[1])

    def test_same_device_twice(self, fake_process, devices, no_bluestore, tmp_path):
        link = tmp_path / 'link'
        os.symlink(devices[1], link)
        with pytest.raises(checks.Refused, match='same device'):
            checks.check_pair(str(link), devices[1])

    def test_ssd_larger_than_hdd(self, fake_process, devices, no_bluestore):
        ssd, hdd = devices
        with pytest.raises(checks.Refused, match=r'--block.ssd .*hdd \(4.0 GiB\) is larger than --data .*ssd \(1.0 GiB\)'):
            checks.check_pair(hdd, ssd)

    def test_equal_sizes_are_accepted(self, fake_process, devices, no_bluestore):
        ssd, hdd = devices
        with open(ssd, 'r+b') as f:
            f.truncate(4 << 30)
        checks.check_pair(ssd, hdd)

    @pytest.mark.parametrize('role', ['ssd', 'hdd'])
    def test_device_with_a_hybridstore_label(self, fake_process, devices, no_bluestore, role):
        ssd, hdd = devices
        dev = ssd if role == 'ssd' else hdd
        fake_process.labels[dev] = label(OSD, role, {'whoami': '5'} if role == 'ssd' else {})
        with pytest.raises(checks.Refused, match='already holds a hybridstore %s label of store %s' % (role, OSD)):
            checks.check_pair(ssd, hdd)

    def test_unfinished_label_is_refused_too(self, fake_process, devices, no_bluestore):
        ssd, hdd = devices
        fake_process.labels[ssd] = label(OSD, 'ssd', done=False)
        with pytest.raises(checks.Refused, match='an unfinished mkfs'):
            checks.check_pair(ssd, hdd)

    def test_device_with_a_bluestore_label(self, fake_process, devices, monkeypatch):
        ssd, hdd = devices
        monkeypatch.setattr('ceph_volume.util.disk.has_bluestore_label', lambda p: p == hdd)
        with pytest.raises(checks.Refused, match='holds a BlueStore label'):
            checks.check_pair(ssd, hdd)

    def test_block_device_in_use(self, fake_process, devices, no_bluestore, monkeypatch):
        ssd, hdd = devices
        real_stat, real_open = os.stat, os.open

        class St(object):
            st_mode = stat.S_IFBLK | 0o660

        def fake_stat(p, *a, **kw):
            return St() if p == hdd else real_stat(p, *a, **kw)

        def fake_open(p, flags, *a, **kw):
            if p == hdd and flags & os.O_EXCL:
                raise OSError(errno.EBUSY, 'busy')
            return real_open(p, flags, *a, **kw)
        monkeypatch.setattr(checks.os, 'stat', fake_stat)
        monkeypatch.setattr(checks.os, 'open', fake_open)
        with pytest.raises(checks.Refused, match='--data .* is in use'):
            checks.check_pair(ssd, hdd)

    def test_no_label_read_on_a_refused_path(self, fake_process, no_bluestore):
        with pytest.raises(checks.Refused):
            checks.check_pair(None, '/dev/sdb')
        assert fake_process.calls == []


def test_human():
    assert checks.human(512) == '512 B'
    assert checks.human(3 << 30) == '3.0 GiB'
