// Options of RocksDB and the commit journal on the fastest tier's device
// (docs/kvfs.md 2.4, 2.5, 3): where they live, and how the KV file system
// under them is sized and grows.
#include "hsoptions/option_tables.h"

namespace hybridstore {

void add_kvfs_options(std::vector<OptionSpec>* v) {
  using T = OptionType;
  v->push_back({"hybridstore_kv_location", T::kString, "device",
                "where mkfs puts RocksDB and the commit journal: device, the default (in the KV file "
                "system on the fastest tier, beside object data; the directory then holds only links "
                "and Ceph's meta files; the tier needs room for it, about 100 MiB at least), or "
                "directory (<store>/db and <store>/journal, on the filesystem holding the store "
                "directory). A store keeps the place it was made with whatever this says later",
                "", "", {"directory", "device"}, true});
  v->push_back({"hybridstore_kv_move_on_mount", T::kBool, "false",
                "a read-write mount of a store whose RocksDB is in its directory first moves it, with the "
                "commit journal, into the KV file system on the fastest tier (hybridstore-tool move-kv; "
                "docs/kvfs.md 7.3), then mounts it from there; a move that fails leaves the store as it was "
                "and the mount goes on from the directory",
                "", ""});
  v->push_back({"hybridstore_kvfs_initial_size", T::kSize, "0",
                "bytes of the fastest tier mkfs lends the KV file system; 0 = 1/16 of the tier "
                "between 64 MiB and 16 GiB, and at least the journal's ring, four log segments and "
                "32 MiB",
                "0", "", {}, true});
  v->push_back({"hybridstore_kvfs_grow_step", T::kSize, "0",
                "bytes the KV file system asks of the tier when it runs short; 0 = 1/64 of the tier, "
                "between one lend unit and 1 GiB",
                "0", ""});
  v->push_back({"hybridstore_kvfs_reserve", T::kSize, "0",
                "free space of the fastest tier that new object data may not take, kept for RocksDB to "
                "grow into; 0 = 1/32 of the tier, at least two grow steps, at most 4 GiB and 1/8 of "
                "the tier, and at least twice RocksDB's write_buffer_size (a flush's table beside the "
                "WAL it empties) up to a quarter of the tier",
                "0", ""});
  v->push_back({"hybridstore_kvfs_give_back", T::kBool, "true",
                "once a second the KV file system gives free space back to the tier when more than four "
                "grow steps of it are free, keeping two steps free and never going below the size mkfs "
                "lent (RocksDB's compactions and WALs leave such peaks behind); false keeps what it grew "
                "to",
                "", ""});
  v->push_back({"hybridstore_kvfs_alloc_unit", T::kSize, "64K",
                "allocation unit of the KV file system: file extents and log segments are multiples "
                "of it",
                "16K", "4M", {}, true, true});
  v->push_back({"hybridstore_kvfs_log_segment", T::kSize, "4M",
                "size of a segment of the KV file system's metadata log (a multiple of its "
                "allocation unit; at most 1/16 of its initial size)",
                "64K", "64M"});
  v->push_back({"hybridstore_kvfs_log_compact", T::kSize, "16M",
                "the KV file system rewrites its metadata log once it is this long and four times "
                "what a fresh snapshot would take",
                "1M", "1G"});
  v->push_back({"hybridstore_kvfs_write_buffer", T::kSize, "1M",
                "bytes a writable file of the KV file system buffers before whole blocks go to the "
                "device",
                "64K", "64M"});
  v->push_back({"hybridstore_kvfs_grow_wait", T::kInt, "5",
                "seconds an allocation of the KV file system waits for the tier to lend more before "
                "RocksDB gets NoSpace",
                "0", "600"});
}

}  // namespace hybridstore
