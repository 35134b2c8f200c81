// Placement: which tier receives new data of an object.
//
// With more than two tiers, "the SSD" below is the fastest tier and "the HDD"
// the slowest: new data goes to one of the two, and the tiers between them
// receive objects by migration only.
//
// Size decides, hints only inform it. An object goes to the HDD when its size
// (after the write) or the size its alloc hint promises reaches
// hybridstore_placement_hdd_threshold; otherwise to the SSD. A sequential,
// append-only or immutable hint does not send a small object to the HDD: a
// 4 KiB object costs the HDD a seek to read whatever way it was written, and
// Ceph's clients hint every object so (rados bench tags each object it writes
// SEQUENTIAL_WRITE | SEQUENTIAL_READ | APPEND_ONLY | IMMUTABLE, librbd tags its
// data objects with their full size). The hints are evidence of size only
// where they carry one: an object hinted sequential or append-only whose
// expected size is unknown (0) goes to the HDD once the write reaches the
// threshold, like any other.
//
// An object that already has data stays on the tier holding most of it, so
// objects are kept whole; the migrator moves whole objects between tiers
// (tier/migrator.h), and a hot small object found on the HDD is queued for
// promotion on its reads (hybridstore_tier_promote_hits). When the chosen tier
// is full the data spills to the next one (slower first); only when all are
// full does the write fail with -ENOSPC.
#pragma once
#include <cstdint>

#include "hscommon/config.h"
#include "hsio/block_device.h"
#include "hybridstore/format/onode.h"

namespace hybridstore {

// Absorbing a small write moves it from the object's tier to the fastest,
// for an allocation, an extent split and a write-back later: it pays only
// when the fastest tier does random writes without seeking and the object's
// tier does not. Tiers on one kind of device (files on one disk, two SSDs)
// write in place instead, as BlueStore would. A device of unknown media
// counts as its role: the fastest solid-state, the others disks.
bool absorb_pays(Media fastest, Media below);

class TierPlacement {
 public:
  // `order`: the store's tiers, fastest first.
  TierPlacement(const Config& cfg, const TierOrder& order);
  // Preferred tier for data written to `o` reaching `write_end`.
  Tier choose(const Onode& o, uint64_t write_end) const;
  uint64_t hdd_threshold() const { return hdd_threshold_; }
  Tier fastest() const { return order_.fastest(); }
  Tier slowest() const { return order_.slowest(); }

 private:
  uint64_t hdd_threshold_;
  TierOrder order_;
};

}  // namespace hybridstore
