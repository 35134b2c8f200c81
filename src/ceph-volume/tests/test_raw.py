"""The raw-mode object store (raw.py): prepare, its rollback, activate."""
import argparse

import pytest

from ceph_volume_hybridstore import checks, common, raw, report
from conftest import label

CLUSTER = 'c1c1c1c1-0000-0000-0000-000000000001'


def args(**kw):
    base = dict(objectstore='hybridstore', data=None, block_ssd=None, crush_device_class='', no_tmpfs=False,
                osd_id=None, cluster_fsid=None, dmcrypt=False, devices=[], osd_fsid=None, activate_all=False)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.fixture
def mkfs_labels(fake_process, monkeypatch):
    """ceph-osd --mkfs, answered: it leaves labels on both devices, with the
    meta the adapter writes (whoami, ceph_fsid, osd_key)."""
    real_call = fake_process.call

    def call(command, **kw):
        out = real_call(command, **kw)
        if command[0].endswith('ceph-osd') and '--mkfs' in command:
            ssd = command[command.index('--hybridstore-ssd-path') + 1]
            hdd = command[command.index('--hybridstore-hdd-path') + 1]
            osd_uuid = command[command.index('--osd-uuid') + 1]
            meta = {'whoami': command[command.index('-i') + 1], 'ceph_fsid': CLUSTER, 'osd_key': kw.get('stdin')}
            fake_process.labels[ssd] = label(osd_uuid, 'ssd', {k: v for k, v in meta.items() if v})
            fake_process.labels[hdd] = label(osd_uuid, 'hdd')
        return out
    monkeypatch.setattr('ceph_volume.process.call', call)
    return fake_process


class TestPrepare(object):
    def test_prepare(self, root, mkfs_labels, devices, no_bluestore, osd_setup, ceph_conf):
        ssd, hdd = devices
        store = raw.HybridRaw(args(data=hdd, block_ssd=ssd, crush_device_class='hdd'))
        store.safe_prepare()
        assert len(osd_setup['create_id']) == 1
        fsid, secrets, _ = osd_setup['create_id'][0]
        assert secrets['crush_device_class'] == 'hdd' and secrets['cephx_secret'] == store.cephx_secret
        assert osd_setup['create_osd_path'] == [('7', True)]
        mkfs = mkfs_labels.commands('ceph-osd')
        assert len(mkfs) == 1
        cmd = mkfs[0]
        assert cmd[cmd.index('--osd-objectstore') + 1] == 'hybridstore'
        assert cmd[cmd.index('--hybridstore-ssd-path') + 1] == ssd
        assert cmd[cmd.index('--hybridstore-hdd-path') + 1] == hdd
        assert cmd[cmd.index('--osd-uuid') + 1] == fsid
        assert cmd[cmd.index('--keyfile') + 1] == '-'
        assert '--bluestore-block-db-path' not in cmd
        # the key went on stdin, never on the command line
        assert store.cephx_secret not in ' '.join(cmd)
        assert ssd in osd_setup['chown'] and hdd in osd_setup['chown']
        # mkfs wrote the meta: nothing set afterwards
        assert mkfs_labels.commands('hybridstore-tool', 'set-label-key') == []

    def test_prepare_completes_the_label(self, root, mkfs_labels, devices, no_bluestore, osd_setup, ceph_conf,
                                         monkeypatch):
        ssd, hdd = devices
        # an adapter that left the key out of the label
        store = raw.HybridRaw(args(data=hdd, block_ssd=ssd))
        orig = common.store_label_meta

        def drop_key_then_store(dev, osd_id, cluster, secret):
            del mkfs_labels.labels[dev]['meta']['osd_key']
            return orig(dev, osd_id, cluster, secret)
        monkeypatch.setattr(common, 'store_label_meta', drop_key_then_store)
        seen = []
        monkeypatch.setattr('ceph_volume_hybridstore.tool.set_label_key', lambda d, k, v: seen.append((d, k, v)))
        store.safe_prepare()
        assert seen == [(ssd, 'osd_key', store.cephx_secret)]

    def test_reuses_osd_id(self, root, mkfs_labels, devices, no_bluestore, osd_setup, ceph_conf):
        ssd, hdd = devices
        raw.HybridRaw(args(data=hdd, block_ssd=ssd, osd_id='12')).safe_prepare()
        assert osd_setup['create_id'][0][2] == '12'

    @pytest.mark.parametrize('case', ['no-ssd', 'swapped', 'labelled', 'dmcrypt'])
    def test_refusals_change_nothing(self, root, fake_process, devices, no_bluestore, osd_setup, case):
        ssd, hdd = devices
        kw = {'no-ssd': dict(data=hdd), 'swapped': dict(data=ssd, block_ssd=hdd),
              'labelled': dict(data=hdd, block_ssd=ssd), 'dmcrypt': dict(data=hdd, block_ssd=ssd, dmcrypt=True)}[case]
        if case == 'labelled':
            fake_process.labels[hdd] = label('f' * 8 + '-0000-0000-0000-' + '0' * 12, 'hdd')
        with pytest.raises(checks.Refused):
            raw.HybridRaw(args(**kw)).safe_prepare()
        assert osd_setup['create_id'] == [] and osd_setup['create_osd_path'] == []
        # reading labels, and the key ceph-volume's base class makes for every OSD, are all that ran
        assert [c for c in fake_process.calls if 'show-label' not in c and c[:2] != ['ceph-authtool', '--gen-print-key']] == []

    def test_failed_mkfs_rolls_back(self, root, mkfs_labels, devices, no_bluestore, osd_setup, ceph_conf):
        ssd, hdd = devices
        mkfs_labels.rc['ceph-osd --cluster ceph'] = 1
        with pytest.raises(RuntimeError, match='Command failed'):
            raw.HybridRaw(args(data=hdd, block_ssd=ssd)).safe_prepare()
        purge = mkfs_labels.commands('ceph', '--cluster')
        assert purge and 'purge-new' in purge[0] and 'osd.7' in purge[0]
        # mkfs (answered) left labels: zapped, both in one call
        zaps = mkfs_labels.commands('hybridstore-tool', 'zap')
        assert zaps == [['hybridstore-tool', 'zap', '--dev', ssd, '--dev', hdd]]

    def test_failure_before_mkfs_zaps_nothing(self, root, fake_process, devices, no_bluestore, osd_setup,
                                              ceph_conf, monkeypatch):
        ssd, hdd = devices

        def no_monmap(osd_id):
            raise RuntimeError('no mon')
        monkeypatch.setattr('ceph_volume.util.prepare.get_monmap', no_monmap)
        with pytest.raises(RuntimeError, match='no mon'):
            raw.HybridRaw(args(data=hdd, block_ssd=ssd)).safe_prepare()
        assert fake_process.commands('hybridstore-tool', 'zap') == []
        assert fake_process.commands('ceph', '--cluster')


OSD = '11111111-2222-3333-4444-555555555555'
OTHER = '99999999-2222-3333-4444-555555555555'


@pytest.fixture
def two_osds(fake_process, monkeypatch):
    fake_process.labels.update({
        '/dev/a': label(OSD, 'ssd', {'whoami': '3', 'ceph_fsid': CLUSTER, 'osd_key': 'k'}),
        '/dev/b': label(OSD, 'hdd'),
        '/dev/c': label(OTHER, 'ssd', {'whoami': '4', 'ceph_fsid': CLUSTER, 'osd_key': 'k'}),
        '/dev/d': label(OTHER, 'hdd')})
    monkeypatch.setattr(report, 'candidate_devices', lambda: ['/dev/a', '/dev/b', '/dev/c', '/dev/d', '/dev/e'])
    return fake_process


class TestActivate(object):
    def primes(self, fp):
        return [c[c.index('--path') + 1:] for c in fp.commands('hybridstore-tool', '--path')]

    def test_by_id_and_fsid(self, root, two_osds, osd_setup, ceph_conf):
        raw.HybridRaw(args(osd_id='3', osd_fsid=OSD)).activate()
        assert osd_setup['create_osd_path'] == [('3', True)]
        assert self.primes(two_osds) == [['/var/lib/ceph/osd/ceph-3', 'prime-osd-dir', '--dev', '/dev/a',
                                          '--dev', '/dev/b']]
        assert '/dev/a' in osd_setup['chown'] and '/dev/b' in osd_setup['chown']

    def test_all(self, root, two_osds, osd_setup, ceph_conf):
        raw.HybridRaw(args(activate_all=True)).activate()
        assert [p[0] for p in self.primes(two_osds)] == ['/var/lib/ceph/osd/ceph-3', '/var/lib/ceph/osd/ceph-4']

    def test_by_device(self, root, two_osds, osd_setup, ceph_conf):
        raw.HybridRaw(args(devices=['/dev/c', '/dev/d'])).activate()
        assert [p[0] for p in self.primes(two_osds)] == ['/var/lib/ceph/osd/ceph-4']

    def test_mounted_directory_is_not_mounted_again(self, root, two_osds, osd_setup, ceph_conf):
        osd_setup['mounted'].append('/var/lib/ceph/osd/ceph-3')
        raw.HybridRaw(args(osd_id='3', osd_fsid=OSD)).activate()
        assert osd_setup['create_osd_path'] == []
        assert len(self.primes(two_osds)) == 1

    def test_no_tmpfs(self, root, two_osds, osd_setup, ceph_conf):
        raw.HybridRaw(args(osd_id='3', osd_fsid=OSD, no_tmpfs=True)).activate()
        assert osd_setup['create_osd_path'] == [('3', False)]

    def test_no_match(self, root, two_osds, osd_setup, ceph_conf):
        with pytest.raises(RuntimeError, match='did not find any matching hybridstore OSD'):
            raw.HybridRaw(args(osd_id='3', osd_fsid=OTHER)).activate()
        assert self.primes(two_osds) == []

    def test_missing_hdd_is_an_error(self, root, two_osds, osd_setup, ceph_conf):
        del two_osds.labels['/dev/b']
        with pytest.raises(RuntimeError, match='no device found for tier\\(s\\) hdd'):
            raw.HybridRaw(args(osd_id='3', osd_fsid=OSD)).activate()
        assert osd_setup['create_osd_path'] == []

    def test_nothing_asked(self, root, two_osds, osd_setup):
        with pytest.raises(RuntimeError, match='needs --osd-id and --osd-uuid'):
            raw.HybridRaw(args()).activate()

    def test_failed_prime_is_an_error(self, root, two_osds, osd_setup, ceph_conf):
        two_osds.rc['hybridstore-tool --path /var/lib/ceph/osd/ceph-3'] = 1
        with pytest.raises(RuntimeError, match='prime-osd-dir of /var/lib/ceph/osd/ceph-3 failed'):
            raw.HybridRaw(args(osd_id='3', osd_fsid=OSD)).activate()

    def test_stale_links_removed_before_prime(self, root, two_osds, osd_setup, ceph_conf, tmp_path, monkeypatch):
        d = tmp_path / 'ceph-3'
        d.mkdir()
        (d / 'block.ssd').symlink_to('/dev/old-ssd')
        (d / 'block.hdd').symlink_to('/dev/old-hdd')
        (d / 'whoami').write_text('3\n')
        monkeypatch.setattr(common, 'osd_path', lambda osd_id: str(d))
        raw.HybridRaw(args(osd_id='3', osd_fsid=OSD)).activate()
        assert sorted(p.name for p in d.iterdir()) == ['whoami']
