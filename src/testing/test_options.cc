// Options of the test-only machinery: fault injection (fault_injection.h)
// and device timing models (device_model.h). Not in the product's registry:
// install_test_storage_hooks registers them, so only binaries that link this
// library and install its hooks know them.
#include "testing/test_options.h"

namespace hybridstore {

void add_fault_injection_options(std::vector<OptionSpec>* v) {
  using T = OptionType;
  // ---- fault injection (debug only; fault_injection.h has the model). Every
  // count is 1-based, counted from the start of the mount, 0 = never.
  v->push_back({"hybridstore_debug_fault_injection", T::kBool, "false",
                "debug: route both devices and RocksDB's files through the fault injector (an emulated "
                "volatile write cache and a RocksDB file system that knows what was synced), without "
                "arming a fault; tests arm faults through its handle"});
  v->push_back({"hybridstore_debug_powercut_after_writes", T::kInt, "0",
                "debug: the power fails during this write, counting device write I/Os and RocksDB file "
                "appends together: every device write not covered by a flush, every RocksDB byte not "
                "covered by a sync and every name change not covered by a directory fsync is lost, and "
                "all I/O fails from then on (0 = never)",
                "0", ""});
  v->push_back({"hybridstore_debug_powercut_tear", T::kBool, "false",
                "debug: the write during which the power fails lands partly (a random part of its 4 KiB "
                "blocks reaches the media) instead of not at all"});
  v->push_back({"hybridstore_debug_powercut_keep", T::kString, "none",
                "debug: what a power cut does to device writes still in the volatile cache: none (all "
                "are lost) or random (each 4 KiB block of each cached write reaches the media with "
                "probability 1/2, seeded by hybridstore_debug_fault_seed: a cache that destaged in any "
                "order)",
                "", "", {"none", "random"}});
  v->push_back({"hybridstore_debug_eio_on_write", T::kInt, "0",
                "debug: this device write I/O fails with EIO and writes nothing (0 = never)", "0", ""});
  v->push_back({"hybridstore_debug_eio_on_flush", T::kInt, "0",
                "debug: this device flush fails with EIO; the writes it should have covered stay "
                "volatile (0 = never)",
                "0", ""});
  v->push_back({"hybridstore_debug_eio_on_kv_sync", T::kInt, "0",
                "debug: this sync of a RocksDB file (WAL, MANIFEST, table) fails with EIO (0 = never)", "0",
                ""});
  v->push_back({"hybridstore_debug_fault_seed", T::kInt, "0",
                "debug: seed of the random choices of fault injection (which part of a torn write lands, "
                "which cached blocks survive under hybridstore_debug_powercut_keep=random)",
                "0", ""});
}

void add_device_model_options(std::vector<OptionSpec>* v) {
  using T = OptionType;
  v->push_back({"hybridstore_device_model", T::kString, "none",
                "charge modelled device time on a virtual clock: none (real time only) or paper "
                "(the HRO paper's HDD and SSD, tunable by hybridstore_model_*)",
                "", "", {"none", "paper"}});
  v->push_back({"hybridstore_model_hdd_seek_track_ms", T::kDouble, "2.0",
                "modelled HDD track-to-track seek time", "0.01", "100"});
  v->push_back({"hybridstore_model_hdd_seek_avg_ms", T::kDouble, "8.9",
                "modelled HDD average seek time (mean over random seeks)", "0.01", "100"});
  v->push_back({"hybridstore_model_hdd_seek_full_ms", T::kDouble, "21",
                "modelled HDD full-stroke seek time", "0.01", "200"});
  v->push_back({"hybridstore_model_hdd_rpm", T::kDouble, "7200", "modelled HDD spindle speed",
                "1000", "20000"});
  v->push_back({"hybridstore_model_hdd_transfer_mbps", T::kDouble, "100",
                "modelled HDD sequential transfer rate, MB/s (10^6 bytes)", "1", "10000"});
  v->push_back({"hybridstore_model_ssd_seq_read_us", T::kDouble, "20",
                "modelled SSD sequential read latency per 4 KiB", "0.1", "100000"});
  v->push_back({"hybridstore_model_ssd_seq_write_us", T::kDouble, "70",
                "modelled SSD sequential write latency per 4 KiB", "0.1", "100000"});
  v->push_back({"hybridstore_model_ssd_rand_read_us", T::kDouble, "270",
                "modelled SSD random read latency (first 4 KiB)", "0.1", "100000"});
  v->push_back({"hybridstore_model_ssd_rand_write_us", T::kDouble, "375",
                "modelled SSD random write latency (first 4 KiB)", "0.1", "100000"});
}

void register_test_options() {
  register_option_table(add_fault_injection_options, /*test_only=*/true);
  register_option_table(add_device_model_options, /*test_only=*/true);
}

}  // namespace hybridstore
