"""A pytest plugin for ceph-volume's own test suite: registers hybridstore
(the plugin module imported, as ceph-volume imports it before it dispatches a
subcommand) before any test runs, to show Ceph's tests pass with it in."""
import importlib

importlib.import_module('ceph_volume_hybridstore.plugin')  # registers on import
register = importlib.import_module('ceph_volume_hybridstore.register')
assert register.registered()
