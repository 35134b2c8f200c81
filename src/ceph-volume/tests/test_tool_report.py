"""hybridstore-tool's output read (tool.py) and OSDs found by labels (report.py)."""
import pytest

from ceph_volume_hybridstore import report, tool
from conftest import label

OSD = '11111111-2222-3333-4444-555555555555'
META = {'whoami': '3', 'ceph_fsid': 'c1c1c1c1-0000-0000-0000-000000000001', 'osd_key': 'AQ==secret'}


class TestTool(object):
    def test_show_label_reads_the_device_entry(self, fake_process):
        fake_process.labels['/dev/sdb'] = label(OSD, 'ssd', META)
        got = tool.show_label('/dev/sdb')
        assert got.fsid == OSD and got.role == 'ssd' and got.committed
        assert got.osd_id == '3' and got.ceph_fsid == META['ceph_fsid']
        assert got.tiers == ['ssd', 'hdd']

    def test_show_label_none_without_label(self, fake_process):
        assert tool.show_label('/dev/sdz') is None

    def test_show_label_none_on_garbage(self, monkeypatch):
        monkeypatch.setattr('ceph_volume.process.call', lambda c, **kw: (['not json'], ['boom'], 1))
        assert tool.show_label('/dev/sdb') is None

    def test_show_label_is_never_logged(self, monkeypatch):
        seen = {}

        def call(command, **kw):
            seen.update(kw)
            return ['{}'], [], 0
        monkeypatch.setattr('ceph_volume.process.call', call)
        tool.show_label('/dev/sdb')
        assert seen['logfile_verbose'] is False and seen['terminal_verbose'] is False

    def test_unfinished_label_is_not_committed(self, fake_process):
        fake_process.labels['/dev/sdb'] = label(OSD, 'ssd', META, done=False)
        assert not tool.show_label('/dev/sdb').committed

    def test_set_label_key_hides_the_value(self, monkeypatch):
        seen = {}

        def call(command, **kw):
            seen['command'], seen['kw'] = command, kw
            return [], [], 0
        monkeypatch.setattr('ceph_volume.process.call', call)
        tool.set_label_key('/dev/sdb', 'osd_key', 'secret')
        assert seen['command'][-6:] == ['--dev', '/dev/sdb', '-k', 'osd_key', '-v', 'secret']
        assert seen['kw']['obfuscate'] == '-v'

    def test_set_label_key_failure_raises(self, fake_process):
        fake_process.rc['hybridstore-tool set-label-key'] = 1
        with pytest.raises(RuntimeError, match='set-label-key osd_key on /dev/sdb failed'):
            tool.set_label_key('/dev/sdb', 'osd_key', 'x')

    def test_zap_names_every_device_in_one_call(self, fake_process):
        tool.zap(['/dev/a', '/dev/b'])
        assert fake_process.commands('hybridstore-tool', 'zap') == [
            ['hybridstore-tool', 'zap', '--dev', '/dev/a', '--dev', '/dev/b']]

    def test_zap_failure_says_nothing_was_zapped(self, fake_process):
        fake_process.rc['hybridstore-tool zap'] = 1
        with pytest.raises(RuntimeError, match='nothing zapped'):
            tool.zap(['/dev/a', '/dev/b'])

    def test_zap_of_nothing_runs_nothing(self, fake_process):
        tool.zap([])
        assert fake_process.calls == []

    def test_prime_command(self, fake_process):
        tool.prime_osd_dir('/var/lib/ceph/osd/ceph-3', ['/dev/ssd', '/dev/hdd'])
        assert fake_process.calls == [['hybridstore-tool', '--path', '/var/lib/ceph/osd/ceph-3', 'prime-osd-dir',
                                       '--dev', '/dev/ssd', '--dev', '/dev/hdd']]

    @pytest.mark.real_require
    def test_require_says_how_to_get_the_tool(self, monkeypatch, tmp_path):
        monkeypatch.setenv(tool.TOOL_ENV, str(tmp_path / 'no-such-tool'))
        with pytest.raises(RuntimeError, match='not found: install hybridstore-tools, or set '
                                               'CEPH_VOLUME_HYBRIDSTORE_TOOL'):
            tool.require()
        exe = tmp_path / 'hybridstore-tool'
        exe.write_text('#!/bin/sh\n')
        exe.chmod(0o755)
        monkeypatch.setenv(tool.TOOL_ENV, str(exe))
        assert tool.require() == str(exe)

    @pytest.mark.real_require
    def test_prepare_without_the_tool_is_refused_before_anything(self, monkeypatch, tmp_path, fake_process):
        from ceph_volume_hybridstore import checks
        monkeypatch.setenv(tool.TOOL_ENV, str(tmp_path / 'no-such-tool'))
        (tmp_path / 'a').write_text('x')
        (tmp_path / 'b').write_text('y')
        with pytest.raises(RuntimeError, match='not found'):
            checks.check_pair(str(tmp_path / 'a'), str(tmp_path / 'b'))
        assert fake_process.calls == []

    def test_tool_from_environment(self, monkeypatch):
        monkeypatch.setenv(tool.TOOL_ENV, '/opt/hs/bin/hybridstore-tool')
        assert tool.tool() == '/opt/hs/bin/hybridstore-tool'


class TestReport(object):
    def scan(self, fake_process, labels):
        fake_process.labels.update(labels)
        return report.scan(list(labels) + ['/dev/empty'])

    def test_an_osd_in_raw_lists_shape(self, fake_process):
        found = self.scan(fake_process, {'/dev/nvme0n1': label(OSD, 'ssd', META), '/dev/sdb': label(OSD, 'hdd')})
        assert found == {OSD: {'osd_uuid': OSD, 'osd_id': 3, 'ceph_fsid': META['ceph_fsid'], 'type': 'hybridstore',
                               'device': '/dev/sdb', 'device_ssd': '/dev/nvme0n1'}}

    def test_the_key_is_not_in_the_report(self, fake_process):
        found = self.scan(fake_process, {'/dev/nvme0n1': label(OSD, 'ssd', META), '/dev/sdb': label(OSD, 'hdd')})
        assert 'secret' not in repr(found)

    def test_missing_hdd_is_named(self, fake_process):
        found = self.scan(fake_process, {'/dev/nvme0n1': label(OSD, 'ssd', META)})
        assert found[OSD]['missing'] == ['hdd'] and 'device' not in found[OSD]

    def test_more_tiers(self, fake_process):
        found = self.scan(fake_process, {'/dev/a': label(OSD, 'ssd', META, tiers=('ssd', 'tier2', 'hdd')),
                                         '/dev/b': label(OSD, 'tier2'), '/dev/c': label(OSD, 'hdd')})
        assert found[OSD]['device_tier2'] == '/dev/b'
        assert report.devices_of(found[OSD]) == ['/dev/a', '/dev/b', '/dev/c']

    def test_unfinished_store_is_not_an_osd(self, fake_process):
        assert self.scan(fake_process, {'/dev/a': label(OSD, 'ssd', META, done=False),
                                        '/dev/b': label(OSD, 'hdd', done=False)}) == {}

    def test_store_without_osd_meta_is_not_an_osd(self, fake_process):
        assert self.scan(fake_process, {'/dev/a': label(OSD, 'ssd', {}), '/dev/b': label(OSD, 'hdd')}) == {}

    def test_hdd_alone_is_not_an_osd(self, fake_process):
        assert self.scan(fake_process, {'/dev/b': label(OSD, 'hdd')}) == {}

    def test_two_osds_kept_apart(self, fake_process):
        other = '99999999-2222-3333-4444-555555555555'
        found = self.scan(fake_process, {'/dev/a': label(OSD, 'ssd', META), '/dev/b': label(OSD, 'hdd'),
                                         '/dev/c': label(other, 'ssd', dict(META, whoami='4')),
                                         '/dev/d': label(other, 'hdd')})
        assert found[OSD]['device'] == '/dev/b' and found[other]['device'] == '/dev/d'
        assert list(report.select(found, osd_id='4')) == [other]
        assert list(report.select(found, osd_fsid=OSD)) == [OSD]
        assert report.select(found, osd_id='3', osd_fsid=other) == {}
        assert len(report.select(found)) == 2

    def test_scan_without_devices_asks_lsblk(self, fake_process, monkeypatch):
        monkeypatch.setattr(report, 'candidate_devices', lambda: ['/dev/a', '/dev/b'])
        fake_process.labels.update({'/dev/a': label(OSD, 'ssd', META), '/dev/b': label(OSD, 'hdd')})
        assert list(report.scan()) == [OSD]
