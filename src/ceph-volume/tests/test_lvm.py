"""The LVM-mode object store (lvm.py), with LVM answered by mocks as in
ceph-volume's own tests: no LV is made here."""
import argparse

import pytest

from ceph_volume_hybridstore import checks, lvm
from conftest import label

CLUSTER = 'c1c1c1c1-0000-0000-0000-000000000001'
OSD = '11111111-2222-3333-4444-555555555555'


class FakeLV(object):
    def __init__(self, vg, name, tags=None, path=None):
        self.vg_name, self.lv_name = vg, name
        self.lv_path = path or '/dev/%s/%s' % (vg, name)
        self.lv_uuid = 'uuid-' + name
        self.tags = dict(tags or {})
        self.name = name

    def set_tags(self, tags):
        self.tags.update({k: str(v) for k, v in tags.items()})


def args(**kw):
    base = dict(objectstore='hybridstore', data='vg/hdd', block_ssd='vg/ssd', block_ssd_size=0, block_ssd_slots=1,
                data_size=0, data_slots=1, osd_id=None, osd_fsid=None, cluster_fsid=None, crush_device_class='',
                dmcrypt=False, with_tpm=False, no_systemd=False, no_tmpfs=False, activate_all=False)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.fixture
def lvs(monkeypatch, tmp_path):
    """Two LVs, vg/hdd (4 GiB) and vg/ssd (1 GiB), their paths files."""
    made = {}
    for name, size in (('hdd', 4 << 30), ('ssd', 1 << 30)):
        path = tmp_path / name
        with open(path, 'wb') as f:
            f.truncate(size)
        made['vg/' + name] = FakeLV('vg', name, path=str(path))

    def get_single_lv(filters=None):
        return made.get('%s/%s' % (filters['vg_name'], filters['lv_name']))

    def get_lvs(tags=None, **kw):
        return [lv for lv in made.values() if all(lv.tags.get(k) == str(v) for k, v in (tags or {}).items())]
    monkeypatch.setattr('ceph_volume.api.lvm.get_single_lv', get_single_lv)
    monkeypatch.setattr('ceph_volume.api.lvm.get_lvs', get_lvs)
    monkeypatch.setattr('ceph_volume.api.lvm.is_vdo', lambda p: '0')
    return made


@pytest.fixture
def mkfs_labels(fake_process, monkeypatch):
    real_call = fake_process.call

    def call(command, **kw):
        out = real_call(command, **kw)
        if command[0].endswith('ceph-osd') and '--mkfs' in command:
            ssd = command[command.index('--hybridstore-ssd-path') + 1]
            osd_uuid = command[command.index('--osd-uuid') + 1]
            fake_process.labels[ssd] = label(osd_uuid, 'ssd', {'whoami': command[command.index('-i') + 1],
                                                               'ceph_fsid': CLUSTER, 'osd_key': kw.get('stdin')})
        return out
    monkeypatch.setattr('ceph_volume.process.call', call)
    return fake_process


class TestPrepare(object):
    def test_prepare_on_lvs_tags_both(self, root, lvs, mkfs_labels, no_bluestore, osd_setup, ceph_conf):
        store = lvm.HybridLvm(args())
        store.safe_prepare()
        hdd, ssd = lvs['vg/hdd'], lvs['vg/ssd']
        for lv in (hdd, ssd):
            assert lv.tags['ceph.objectstore'] == 'hybridstore'
            assert lv.tags['ceph.osd_id'] == '7'
            assert lv.tags['ceph.osd_fsid'] == store.osd_fsid
            assert lv.tags['ceph.cluster_fsid'] == CLUSTER
            assert lv.tags['ceph.block_device'] == hdd.lv_path
        assert hdd.tags['ceph.type'] == 'block' and ssd.tags['ceph.type'] == 'ssd'
        assert hdd.tags['ceph.ssd_device'] == ssd.lv_path and hdd.tags['ceph.ssd_uuid'] == ssd.lv_uuid
        assert ssd.tags['ceph.ssd_device'] == ssd.lv_path
        cmd = mkfs_labels.commands('ceph-osd')[0]
        assert cmd[cmd.index('--hybridstore-ssd-path') + 1] == ssd.lv_path
        assert cmd[cmd.index('--hybridstore-hdd-path') + 1] == hdd.lv_path
        assert cmd[cmd.index('--osd-objectstore') + 1] == 'hybridstore'
        # no `block` link: prepare_osd_req makes the directory, monmap, keyring only
        assert mkfs_labels.commands('ln') == []
        assert osd_setup['create_osd_path'] == [('7', True)]

    def test_prepare_on_devices_makes_lvs_ssd_in_slots(self, root, lvs, mkfs_labels, no_bluestore, osd_setup,
                                                      ceph_conf, monkeypatch, tmp_path):
        made = []

        def create_lv(name_prefix, uuid, vg=None, device=None, slots=None, extents=None, size=None, tags=None):
            lv = FakeLV('ceph-vg', '%s-%s' % (name_prefix, uuid), tags=tags, path=str(tmp_path / name_prefix))
            with open(lv.lv_path, 'wb') as f:
                f.truncate(1 << 30)
            made.append((name_prefix, device, slots))
            return lv
        monkeypatch.setattr('ceph_volume.api.lvm.create_lv', create_lv)
        monkeypatch.setattr('ceph_volume.util.disk.is_device', lambda d: d.startswith('/dev/sd') or d.startswith('/dev/nvme'))
        monkeypatch.setattr('ceph_volume.util.disk.is_partition', lambda d: False)
        monkeypatch.setattr('ceph_volume.api.lvm.get_device_vgs', lambda d, p='': [])
        store = lvm.HybridLvm(args(data='/dev/sdb', block_ssd='/dev/nvme0n1', block_ssd_slots=3))
        store.checked = True          # as lvm batch does: its plan was checked
        store.safe_prepare()
        assert made == [('osd-block', '/dev/sdb', 1), ('osd-ssd', '/dev/nvme0n1', 3)]
        assert store.tags['ceph.ssd_device'] == str(tmp_path / 'osd-ssd')
        cmd = mkfs_labels.commands('ceph-osd')[0]
        assert cmd[cmd.index('--hybridstore-ssd-path') + 1] == str(tmp_path / 'osd-ssd')
        assert cmd[cmd.index('--hybridstore-hdd-path') + 1] == str(tmp_path / 'osd-block')

    def test_missing_ssd(self, root, lvs, fake_process, no_bluestore, osd_setup):
        with pytest.raises(checks.Refused, match='needs --block.ssd'):
            lvm.HybridLvm(args(block_ssd=None)).safe_prepare()
        assert osd_setup['create_id'] == []

    def test_lv_of_another_osd(self, root, lvs, fake_process, no_bluestore, osd_setup):
        lvs['vg/ssd'].tags.update({'ceph.osd_id': '2', 'ceph.objectstore': 'bluestore'})
        with pytest.raises(checks.Refused, match='--block.ssd vg/ssd already belongs to osd.2 \\(bluestore\\)'):
            lvm.HybridLvm(args()).safe_prepare()
        assert osd_setup['create_id'] == [] and lvs['vg/hdd'].tags == {}

    def test_ssd_larger(self, root, lvs, fake_process, no_bluestore, osd_setup):
        with pytest.raises(checks.Refused, match='is larger than --data'):
            lvm.HybridLvm(args(data='vg/ssd', block_ssd='vg/hdd')).safe_prepare()
        assert osd_setup['create_id'] == []

    def test_labelled_lv(self, root, lvs, fake_process, no_bluestore, osd_setup):
        fake_process.labels[lvs['vg/hdd'].lv_path] = label(OSD, 'hdd')
        with pytest.raises(checks.Refused, match='already holds a hybridstore hdd label'):
            lvm.HybridLvm(args()).safe_prepare()
        assert osd_setup['create_id'] == []

    def test_rollback_uses_cephs(self, root, lvs, mkfs_labels, no_bluestore, osd_setup, ceph_conf, monkeypatch):
        rolled = []
        monkeypatch.setattr(lvm, 'rollback_osd', lambda osd_id: rolled.append(osd_id))
        mkfs_labels.rc['ceph-osd --cluster ceph'] = 1
        with pytest.raises(RuntimeError):
            lvm.HybridLvm(args()).safe_prepare()
        assert rolled == ['7']


@pytest.fixture
def prepared(lvs):
    common_tags = {'ceph.osd_id': '3', 'ceph.osd_fsid': OSD, 'ceph.cluster_name': 'ceph',
                   'ceph.objectstore': 'hybridstore', 'ceph.block_device': lvs['vg/hdd'].lv_path,
                   'ceph.ssd_device': lvs['vg/ssd'].lv_path}
    lvs['vg/hdd'].tags.update(common_tags, **{'ceph.type': 'block'})
    lvs['vg/ssd'].tags.update(common_tags, **{'ceph.type': 'ssd'})
    return lvs


@pytest.fixture
def systemd(monkeypatch):
    seen = []
    from ceph_volume.systemd import systemctl
    monkeypatch.setattr(systemctl, 'enable_volume', lambda i, f, t: seen.append(('enable_volume', i, f, t)))
    monkeypatch.setattr(systemctl, 'enable_osd', lambda i: seen.append(('enable_osd', i)))
    monkeypatch.setattr(systemctl, 'start_osd', lambda i: seen.append(('start_osd', i)))
    monkeypatch.setattr(systemctl, 'osd_is_active', lambda i: False)
    monkeypatch.setattr('ceph_volume.configuration.load', lambda *a, **kw: None)
    return seen


class TestActivate(object):
    def test_activate_primes_and_starts(self, root, prepared, fake_process, osd_setup, systemd):
        lvm.HybridLvm(args(osd_id='3', osd_fsid=OSD)).activate()
        primes = fake_process.commands('hybridstore-tool', '--path')
        assert primes == [['hybridstore-tool', '--path', '/var/lib/ceph/osd/ceph-3', 'prime-osd-dir',
                           '--dev', prepared['vg/ssd'].lv_path, '--dev', prepared['vg/hdd'].lv_path]]
        assert systemd == [('enable_volume', '3', OSD, 'lvm'), ('enable_osd', '3'), ('start_osd', '3')]

    def test_no_systemd(self, root, prepared, fake_process, osd_setup, systemd):
        lvm.HybridLvm(args(osd_id='3', osd_fsid=OSD, no_systemd=True)).activate()
        assert systemd == []
        assert len(fake_process.commands('hybridstore-tool', '--path')) == 1

    def test_ssd_by_tag_when_no_ssd_lv(self, root, prepared, fake_process, osd_setup, systemd):
        prepared['vg/ssd'].tags = {}
        prepared['vg/hdd'].tags['ceph.ssd_device'] = '/dev/nvme0n1p3'
        lvm.HybridLvm(args(osd_id='3', osd_fsid=OSD, no_systemd=True)).activate()
        cmd = fake_process.commands('hybridstore-tool', '--path')[0]
        assert cmd[-4:] == ['--dev', '/dev/nvme0n1p3', '--dev', prepared['vg/hdd'].lv_path]

    def test_bluestore_lvs_refused(self, root, prepared, fake_process, osd_setup, systemd):
        prepared['vg/hdd'].tags['ceph.objectstore'] = 'bluestore'
        with pytest.raises(RuntimeError, match='is a bluestore OSD, not hybridstore'):
            lvm.HybridLvm(args(osd_id='3', osd_fsid=OSD)).activate()
        assert osd_setup['create_osd_path'] == []

    def test_needs_fsid(self, root, prepared, fake_process, osd_setup, systemd):
        with pytest.raises(RuntimeError, match='provide the osd_fsid'):
            lvm.HybridLvm(args(osd_id='3')).activate()

    def test_activate_all_only_hybridstore(self, root, prepared, fake_process, osd_setup, systemd, monkeypatch):
        report = {'3': [{'tags': prepared['vg/hdd'].tags}, {'tags': prepared['vg/ssd'].tags}],
                  '5': [{'tags': {'ceph.type': 'block', 'ceph.osd_fsid': 'bs', 'ceph.objectstore': 'bluestore'}}]}
        monkeypatch.setattr(lvm, 'direct_report', lambda: report)
        assert lvm.hybridstore_osds() == {OSD: '3'}
        lvm.HybridLvm(args(activate_all=True, no_systemd=True)).activate_all()
        assert [c[2] for c in fake_process.commands('hybridstore-tool', '--path')] == ['/var/lib/ceph/osd/ceph-3']
