"""The subcommands as they answer --objectstore hybridstore (cli.py), the
registration (register.py) and the plugin (plugin.py)."""
import argparse

import pytest

from ceph_volume_hybridstore import cli, common, register

OSD = '11111111-2222-3333-4444-555555555555'


@pytest.fixture
def registered():
    register.register()


class TestRegister(object):
    def test_mapping_and_mappers(self, registered):
        from ceph_volume import objectstore
        from ceph_volume.devices.raw.main import Raw
        from ceph_volume.devices.lvm.main import LVM
        import ceph_volume.activate.main as top
        from ceph_volume_hybridstore.lvm import HybridLvm
        from ceph_volume_hybridstore.raw import HybridRaw
        assert objectstore.mapping['RAW']['hybridstore'] is HybridRaw
        assert objectstore.mapping['LVM']['hybridstore'] is HybridLvm
        # Ceph's own stores are where they were
        assert objectstore.mapping['RAW']['bluestore'].__module__ == 'ceph_volume.objectstore.raw'
        assert objectstore.mapping['LVM']['bluestore'].__module__ == 'ceph_volume.objectstore.lvm'
        assert Raw.mapper['prepare'] is cli.RawPrepare and Raw.mapper['activate'] is cli.RawActivate
        assert Raw.mapper['list'] is cli.RawList
        assert LVM.mapper['prepare'] is cli.LvmPrepare and LVM.mapper['create'] is cli.LvmCreate
        assert LVM.mapper['activate'] is cli.LvmActivate and LVM.mapper['zap'] is cli.Zap
        assert LVM.mapper['batch'] is cli.LvmBatch
        assert LVM.mapper['migrate'].__module__ == 'ceph_volume.devices.lvm.migrate'
        assert top.RAWActivate is cli.AnyRawActivate and top.LVMActivate is cli.AnyLvmActivate

    def test_idempotent(self, registered):
        from ceph_volume.devices.raw.main import Raw
        register.register()
        assert Raw.mapper['prepare'] is cli.RawPrepare

    def test_subclasses_of_cephs(self, registered):
        from ceph_volume.devices.raw import prepare, activate
        from ceph_volume.devices.lvm import zap
        assert issubclass(cli.RawPrepare, prepare.Prepare) and issubclass(cli.RawActivate, activate.Activate)
        assert issubclass(cli.Zap, zap.Zap)

    def test_plugin_command(self, registered, capsys, monkeypatch):
        from ceph_volume_hybridstore import plugin
        monkeypatch.setattr(plugin.shutil, 'which', lambda t: None)
        plugin.Hybridstore([]).main()
        out = capsys.readouterr().out
        assert 'raw objectstores: bluestore, hybridstore' in out
        assert 'lvm objectstores: bluestore, hybridstore, seastore' in out
        assert 'not found (set CEPH_VOLUME_HYBRIDSTORE_TOOL)' in out

    def test_ceph_volume_loads_the_entry_point(self, monkeypatch):
        from ceph_volume import main as cv_main

        class EP(object):
            name = 'hybridstore'

            def load(self):
                from ceph_volume_hybridstore.plugin import Hybridstore
                return Hybridstore
        monkeypatch.setattr(cv_main, 'get_entry_points', lambda group: [EP()] if group == 'ceph_volume_handlers' else [])
        v = cv_main.Volume(argv=['ceph-volume'], parse=False)
        v.enable_plugins()
        assert v.mapper['hybridstore'].name == 'hybridstore'
        assert 'hybridstore' in v.plugin_help


class TestArgs(object):
    @pytest.mark.parametrize('argv,want', [
        (['--data', 'x', '--objectstore', 'hybridstore'], 'hybridstore'),
        (['--objectstore=hybridstore'], 'hybridstore'),
        (['--objectstore', 'bluestore'], 'bluestore'),
        (['--data', 'x'], None), ([], None), (None, None), (['--objectstore'], None)])
    def test_requested_objectstore(self, argv, want):
        assert cli.requested_objectstore(argv) == want

    def test_raw_prepare_parser(self):
        a = cli.raw_prepare_parser('p', 'd').parse_args(['--objectstore', 'hybridstore', '--data', '/dev/sdb',
                                                         '--block.ssd', '/dev/nvme0n1', '--osd-id', '4'])
        assert (a.data, a.block_ssd, a.osd_id, a.no_tmpfs) == ('/dev/sdb', '/dev/nvme0n1', '4', False)

    def test_lvm_parser_has_cephs_options_and_ssd(self):
        a = cli.lvm_parser('p', 'd').parse_args(['--objectstore', 'hybridstore', '--data', 'vg/hdd',
                                                 '--block.ssd', '/dev/nvme0n1', '--block.ssd-size', '10G',
                                                 '--crush-device-class', 'hdd', '--no-systemd'])
        assert a.block_ssd == '/dev/nvme0n1' and int(a.block_ssd_size) == 10 << 30
        assert a.crush_device_class == 'hdd' and a.no_systemd and a.data_slots == 1 and a.osd_fsid is None

    def test_help_is_honest(self, capsys):
        with pytest.raises(SystemExit):
            cli.raw_prepare_parser('ceph-volume raw prepare', cli.RAW_PREPARE_HELP).parse_args(['--help'])
        out = capsys.readouterr().out
        assert '--block.ssd' in out and 'an SSD larger than the HDD' in out


class TestDispatch(object):
    def test_raw_prepare_bluestore_goes_to_ceph(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr('ceph_volume.devices.raw.prepare.Prepare.main', lambda self: seen.append(self.argv))
        cli.RawPrepare(['--data', '/dev/sdb']).main()
        assert seen == [['--data', '/dev/sdb']]

    def test_raw_prepare_hybridstore_is_ours(self, registered, monkeypatch):
        seen = []

        class Store(object):
            def __init__(self, args):
                seen.append(args)

            def safe_prepare(self, args=None):
                seen.append('prepared')
        from ceph_volume import objectstore
        monkeypatch.setitem(objectstore.mapping['RAW'], 'hybridstore', Store)
        cli.RawPrepare(['--objectstore', 'hybridstore', '--data', '/dev/sdb', '--block.ssd', '/dev/sdc']).main()
        assert seen[0].block_ssd == '/dev/sdc' and seen[1] == 'prepared'

    def test_raw_prepare_help_of_ceph_gets_a_note(self, registered, monkeypatch, capsys):
        def ceph_main(self):
            raise SystemExit(0)
        monkeypatch.setattr('ceph_volume.devices.raw.prepare.Prepare.main', ceph_main)
        with pytest.raises(SystemExit):
            cli.RawPrepare(['--help']).main()
        assert '--objectstore hybridstore --help' in capsys.readouterr().out

    def test_raw_activate_picks_hybridstore_by_label(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr(cli.report, 'scan', lambda devices=None: {OSD: {'osd_id': 3}})
        monkeypatch.setattr('ceph_volume.devices.raw.activate.Activate.main', lambda self: seen.append('ceph'))
        monkeypatch.setattr(cli.HybridRaw, 'activate', lambda self: seen.append(('ours', self.osd_id, self.osd_fsid)))
        cli.RawActivate(['--osd-id', '3', '--osd-uuid', OSD, '--no-systemd']).main()
        cli.RawActivate(['--osd-id', '4', '--osd-uuid', 'x']).main()
        assert seen == [('ours', '3', OSD), 'ceph']

    def test_raw_activate_all(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr(cli.HybridRaw, 'activate', lambda self: seen.append(self.args.activate_all))
        cli.RawActivate(['--all']).main()
        assert seen == [True]

    def test_raw_activate_other_store_goes_to_ceph(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr('ceph_volume.devices.raw.activate.Activate.main', lambda self: seen.append('ceph'))
        cli.RawActivate(['--objectstore', 'bluestore', '--osd-id', '3', '--osd-uuid', OSD]).main()
        assert seen == ['ceph']

    def test_raw_list_merges(self, registered, monkeypatch):
        monkeypatch.setattr('ceph_volume.devices.raw.list.List.generate',
                            lambda self, devices=None: {'bs': {'type': 'bluestore'}})
        monkeypatch.setattr(cli.report, 'scan', lambda devices=None: {OSD: {'type': 'hybridstore'}})
        assert cli.RawList([]).generate() == {'bs': {'type': 'bluestore'}, OSD: {'type': 'hybridstore'}}

    def test_lvm_prepare_bluestore_goes_to_ceph(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr('ceph_volume.devices.lvm.prepare.Prepare.main', lambda self: seen.append('ceph'))
        cli.LvmPrepare(['--data', 'vg/lv']).main()
        assert seen == ['ceph']

    def test_lvm_create_hybridstore(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr('ceph_volume.devices.lvm.create.Create.create', lambda self: seen.append(self.args))
        cli.LvmCreate(['--objectstore', 'hybridstore', '--data', 'vg/hdd', '--block.ssd', 'vg/ssd']).main()
        assert seen[0].objectstore == 'hybridstore' and seen[0].block_ssd == 'vg/ssd'

    def test_lvm_activate_by_tag(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr(cli.LvmActivate, 'is_hybridstore_osd', staticmethod(lambda i, f: i == '3'))
        monkeypatch.setattr(cli.HybridLvm, 'activate', lambda self, *a, **kw: seen.append('ours'))
        monkeypatch.setattr('ceph_volume.devices.lvm.activate.Activate.main', lambda self: seen.append('ceph'))
        cli.LvmActivate(['3', OSD, '--no-systemd']).main()
        cli.LvmActivate(['5', 'x']).main()
        assert seen == ['ours', 'ceph']

    def test_lvm_activate_all_mixed(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr(cli, 'lvm_osds', lambda: {OSD: {'osd_id': '3', 'objectstore': 'hybridstore'},
                                                       'bs': {'osd_id': '5', 'objectstore': 'bluestore'}})
        monkeypatch.setattr(cli.HybridLvm, 'activate',
                            lambda self, args=None, osd_id=None, osd_fsid=None: seen.append(('ours', osd_id)))
        monkeypatch.setattr('ceph_volume.objectstore.lvm.Lvm.activate',
                            lambda self, args=None, osd_id=None, osd_fsid=None: seen.append(('ceph', osd_id)))
        cli.LvmActivate(['--all', '--no-systemd']).main()
        assert seen == [('ours', '3'), ('ceph', '5')]

    def test_lvm_activate_all_without_hybridstore_is_cephs(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr(cli, 'lvm_osds', lambda: {'bs': {'osd_id': '5', 'objectstore': 'bluestore'}})
        monkeypatch.setattr('ceph_volume.devices.lvm.activate.Activate.main', lambda self: seen.append('ceph'))
        cli.LvmActivate(['--all']).main()
        assert seen == ['ceph']

    def test_top_level_activate(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr(cli.report, 'scan', lambda devices=None: {OSD: {'osd_id': 3}})
        monkeypatch.setattr(cli.HybridRaw, 'activate', lambda self: seen.append('ours'))
        monkeypatch.setattr(cli.CephRaw, 'activate', lambda self: seen.append('ceph'))
        a = argparse.Namespace(osd_id='3', osd_fsid=OSD, no_systemd=True, no_tmpfs=False)
        cli.AnyRawActivate(a).activate()
        cli.AnyRawActivate(argparse.Namespace(osd_id='9', osd_fsid='y', no_systemd=True, no_tmpfs=False)).activate()
        assert seen == ['ours', 'ceph']


class FakeDevice(object):
    def __init__(self, path):
        self.path = path


class TestZap(object):
    def zapper(self, devices, osd_id=None, osd_fsid=None):
        z = cli.Zap([])
        z.args = argparse.Namespace(devices=[FakeDevice(d) for d in devices], osd_id=osd_id, osd_fsid=osd_fsid,
                                    destroy=True, no_systemd=True)
        return z

    def test_labelled_devices_zapped_by_the_tool_first(self, monkeypatch):
        order = []
        monkeypatch.setattr(cli.report.tool, 'show_label', lambda p: object() if p != '/dev/plain' else None)
        monkeypatch.setattr(cli.report.tool, 'zap', lambda ds: order.append(('tool', ds)))
        monkeypatch.setattr('ceph_volume.devices.lvm.zap.Zap.zap', lambda self: order.append('ceph'))
        self.zapper(['/dev/ssd', '/dev/hdd', '/dev/plain']).zap()
        assert order == [('tool', ['/dev/ssd', '/dev/hdd']), 'ceph']

    def test_in_use_stops_before_ceph_wipes(self, monkeypatch):
        order = []
        monkeypatch.setattr(cli.report.tool, 'show_label', lambda p: object())

        def refuse(ds):
            raise RuntimeError('hybridstore-tool zap of /dev/ssd failed (exit 1), nothing zapped: in use')
        monkeypatch.setattr(cli.report.tool, 'zap', refuse)
        monkeypatch.setattr('ceph_volume.devices.lvm.zap.Zap.zap', lambda self: order.append('ceph'))
        with pytest.raises(RuntimeError, match='nothing zapped'):
            self.zapper(['/dev/ssd']).zap()
        assert order == []

    def test_osd_id_finds_raw_hybridstore_devices(self, monkeypatch):
        monkeypatch.setattr(cli.report, 'scan', lambda devices=None: {
            OSD: {'osd_id': 3, 'osd_uuid': OSD, 'device': '/dev/hdd', 'device_ssd': '/dev/ssd'}})

        def none(self):
            raise SystemExit('No OSD were found.')
        monkeypatch.setattr('ceph_volume.devices.lvm.zap.Zap.find_associated_devices', none)
        monkeypatch.setattr(cli, 'Device', FakeDevice)
        got = self.zapper([], osd_id='3').find_associated_devices()
        assert [d.path for d in got] == ['/dev/ssd', '/dev/hdd']

    def test_osd_id_nowhere(self, monkeypatch):
        monkeypatch.setattr(cli.report, 'scan', lambda devices=None: {})

        def none(self):
            raise SystemExit('No OSD were found.')
        monkeypatch.setattr('ceph_volume.devices.lvm.zap.Zap.find_associated_devices', none)
        with pytest.raises(SystemExit, match='No OSD were found'):
            self.zapper([], osd_id='3').find_associated_devices()


def test_common_osd_path(monkeypatch):
    from ceph_volume import conf
    monkeypatch.setattr(conf, 'cluster', 'ceph')
    assert common.osd_path('3') == '/var/lib/ceph/osd/ceph-3'
    assert common.mkfs_device_options('/dev/a', '/dev/b') == ['--hybridstore-ssd-path', '/dev/a',
                                                              '--hybridstore-hdd-path', '/dev/b']


class TestBatch(object):
    def test_other_stores_are_cephs(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr('ceph_volume.devices.lvm.batch.Batch.__init__', lambda self, argv: seen.append(argv))
        monkeypatch.setattr('ceph_volume.devices.lvm.batch.Batch.main', lambda self: seen.append('main'))
        cli.LvmBatch(['/dev/sdb']).main()
        assert seen == [['/dev/sdb'], 'main']

    def test_hybridstore_is_ours(self, registered, monkeypatch):
        seen = []
        monkeypatch.setattr('ceph_volume.devices.lvm.batch.Batch.__init__', lambda self, argv: seen.append('ceph'))
        monkeypatch.setattr(cli.batch, 'run', lambda args: seen.append((args.devices, args.ssd_devices, args.report)))
        cli.LvmBatch(['--objectstore', 'hybridstore', '--ssd-devices', '/dev/nvme0n1', '--report',
                      '/dev/sdb', '/dev/sdc']).main()
        assert seen == [(['/dev/sdb', '/dev/sdc'], ['/dev/nvme0n1'], True)]


class TestPluginZap(object):
    def test_labels_then_wipe(self, registered, fake_process, tmp_path, monkeypatch):
        from ceph_volume_hybridstore import plugin
        from conftest import label
        a, b = str(tmp_path / 'a'), str(tmp_path / 'b')
        for p in (a, b):
            open(p, 'w').close()
        fake_process.labels[a] = label(OSD, 'ssd')
        monkeypatch.setattr('ceph_volume.util.disk.has_bluestore_label', lambda p: False)
        plugin.Hybridstore(['zap', a, b]).main()
        assert fake_process.commands('hybridstore-tool', 'zap') == [['hybridstore-tool', 'zap', '--dev', a]]
        assert [c[-1] for c in fake_process.commands('wipefs')] == [a, b]
        assert len(fake_process.commands('dd')) == 2

    def test_in_use_zaps_nothing(self, registered, fake_process, tmp_path, monkeypatch):
        from ceph_volume_hybridstore import plugin
        from conftest import label
        a = str(tmp_path / 'a')
        open(a, 'w').close()
        fake_process.labels[a] = label(OSD, 'ssd')
        fake_process.rc['hybridstore-tool zap'] = 1
        with pytest.raises(RuntimeError, match='nothing zapped'):
            plugin.Hybridstore(['zap', a]).main()
        assert fake_process.commands('wipefs') == [] and fake_process.commands('dd') == []
