"""A pytest plugin for ceph-volume's own test suite: registers hybridstore
(the plugin module imported, as ceph-volume imports it before it dispatches a
subcommand) before any test runs, to show Ceph's tests pass with it in."""
import ceph_volume_hybridstore.plugin  # noqa: F401  (registers on import)
from ceph_volume_hybridstore import register

assert register.registered()
