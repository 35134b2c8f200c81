// The FTL: a block interface over raw NAND, composed of the layers below it.
//
//   Ftl (this file)      sectors and LEBs, trim, flush, maintenance
//   LebCache             one-LEB write-back cache (mtdblock-like)
//   MappingPolicy        ubi | pubi | hubi: logical pages -> flash pages
//   WearLeveler          PEB states, erase queue, wear levelling, bad blocks
//   FlashIo              headers, tags, checksums
//   NandModel/NandMedia  the chip: rules, faults, timing, persistence
//
// A sector is one NAND page of data (2 KiB by default); a LEB is
// pages_per_leb() sectors; the device has leb_count() LEBs. Writes are durable
// after flush() returns 0 (the cache and, in background mode, pending merges
// hold data in RAM until then); with the cache off and no background mode,
// every write is durable when it returns.
//
// Not thread-safe (NandBlockDevice adds a lock). After the chip loses power
// (injected power cut) every call returns -EIO: reopen with attach().
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ftl/ftl_options.h"
#include "ftl/leb_cache.h"
#include "ftl/mapping_policy.h"

namespace hybridstore::ftl {

struct AttachReport {
  double wall_ms = 0;           // host time the attach took
  int64_t flash_ns = 0;         // NAND time (virtual clock), scan + recovery
  int64_t scan_flash_ns = 0;    // of which the scan
  uint64_t page_reads = 0;      // full-page reads
  uint64_t tag_reads = 0;       // OOB-only reads
  ScanResult scan;              // pebs[] cleared; the counts stay
  uint64_t erased = 0;          // stale or damaged PEBs erased during recovery
  uint64_t relocated = 0;       // torn PEBs copied
};

class Ftl {
 public:
  ~Ftl();
  Ftl(const Ftl&) = delete;
  Ftl& operator=(const Ftl&) = delete;

  // Erases every good block and writes EC headers (erase counters found on the
  // flash are kept, as ubiformat does). Factory-bad blocks in opts are marked
  // first. Then the FTL is ready, with nothing mapped.
  static int format(std::shared_ptr<NandMedia> media, const FtlOptions& opts,
                    std::unique_ptr<Ftl>* out, std::string* error);
  // Scans the flash and rebuilds everything. The image parameters (policy,
  // layout, LEB count) come from the flash; runtime options from `opts`.
  // -ENODATA when the flash was never formatted.
  static int attach(std::shared_ptr<NandMedia> media, const FtlOptions& opts,
                    std::unique_ptr<Ftl>* out, std::string* error,
                    AttachReport* report = nullptr);

  // Clean shutdown: flush, finish background work, drain erases, sync.
  int close();

  uint32_t sector_size() const { return ctx_.geo.page_size; }
  uint32_t pages_per_leb() const { return policy_->pages_per_leb(); }
  uint32_t leb_count() const { return ctx_.image.leb_count; }
  uint64_t leb_bytes() const { return uint64_t(pages_per_leb()) * sector_size(); }
  uint64_t sector_count() const { return uint64_t(leb_count()) * pages_per_leb(); }
  uint64_t size_bytes() const { return sector_count() * sector_size(); }

  // Sector granularity. -EINVAL past the end.
  int read_sectors(uint64_t sector, uint64_t count, char* buf);
  int write_sectors(uint64_t sector, uint64_t count, const char* buf);
  int trim_sectors(uint64_t sector, uint64_t count);
  // LEB granularity (a whole LEB, leb_bytes()).
  int read_leb(uint32_t leb, char* buf);
  int write_leb(uint32_t leb, const char* buf);
  int unmap_leb(uint32_t leb);

  int flush();

  // Background mode: lets deferred work run while the chip would otherwise be
  // idle, up to virtual time `t_ns` (a step started before t may end after).
  int idle_until(int64_t t_ns);

  VirtualClock* clock() { return &clock_; }
  NandModel* nand() { return nand_.get(); }
  WearLeveler* wear_leveler() { return wl_.get(); }
  MappingPolicy* policy() { return policy_.get(); }
  const FtlContext& context() const { return ctx_; }
  const ImageParams& image() const { return ctx_.image; }
  const FtlOptions& options() const { return opts_; }
  bool dead() const { return dead_; }
  // Invariants of every layer (tests).
  int check(std::string* error) const;

 private:
  explicit Ftl(std::shared_ptr<NandMedia> media, const FtlOptions& opts);
  int init_layers(const ImageParams& image);
  int after_write(uint64_t pages);
  int fail(int r);
  // 0, -EIO once the FTL is dead, or -EINVAL for a range past the end.
  int check_range(uint64_t sector, uint64_t count) const;

  FtlOptions opts_;
  VirtualClock clock_;
  std::shared_ptr<NandMedia> media_;
  std::unique_ptr<NandModel> nand_;
  std::unique_ptr<FlashIo> io_;
  std::unique_ptr<WearLeveler> wl_;
  FtlContext ctx_;
  std::unique_ptr<MappingPolicy> policy_;
  std::unique_ptr<LebCache> cache_;
  std::vector<char> page_;
  uint64_t last_wl_erases_ = 0;
  bool dead_ = false;
};

}  // namespace hybridstore::ftl
