// Options of the durability component; each entry documents itself in the registry.
#include "hybridstore/common/config.h"

namespace hybridstore {

void add_durability_options(std::vector<OptionSpec>* v) {
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
                "debug: seed of the random choices of fault injection (which part of a torn write lands)",
                "0", ""});
}

}  // namespace hybridstore
