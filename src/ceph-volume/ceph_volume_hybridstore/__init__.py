"""hybridstore for ceph-volume: `--objectstore hybridstore` in raw and lvm
mode (an SSD and an HDD per OSD), loaded by ceph-volume as a plugin
(the `ceph_volume_handlers` entry point `hybridstore`)."""
__version__ = '0.1'
