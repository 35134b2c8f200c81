"""A pytest plugin for ceph-volume's own test suite: registers hybridstore
(the plugin module imported, as ceph-volume imports it before it dispatches a
subcommand) before any test runs, to show Ceph's tests pass with it in."""
import importlib

# ceph-volume has imported its main module (and with it everything the
# plugin uses) when it loads a plugin
importlib.import_module('ceph_volume.main')
importlib.import_module('ceph_volume_hybridstore.plugin')  # registers on import
register = importlib.import_module('ceph_volume_hybridstore.register')
assert register.registered()
