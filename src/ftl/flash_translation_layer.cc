#include "ftl/flash_translation_layer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "hscommon/log.h"

namespace hybridstore::ftl {

Ftl::Ftl(std::shared_ptr<NandMedia> media, const FtlOptions& opts)
    : opts_(opts), media_(std::move(media)) {
  nand_ = std::make_unique<NandModel>(media_, opts_.nand, &clock_);
  io_ = std::make_unique<FlashIo>(nand_.get());
  wl_ = std::make_unique<WearLeveler>(io_.get(), opts_.wl_threshold);
}

Ftl::~Ftl() = default;

int Ftl::init_layers(const ImageParams& image) {
  ctx_.io = io_.get();
  ctx_.wl = wl_.get();
  ctx_.clock = &clock_;
  ctx_.image = image;
  ctx_.geo = media_->geometry();
  ctx_.background = opts_.background_merge;
  wl_->set_image(image);
  policy_ = make_policy(&ctx_, opts_.merge_watermark, opts_.background_steps);
  cache_ = std::make_unique<LebCache>(policy_.get(), opts_.cache, ctx_.geo.page_size,
                                      policy_->pages_per_leb());
  page_.resize(ctx_.geo.page_size);
  return 0;
}

namespace {

// -EINVAL unless the parameters found in EC headers fit this flash.
int validate_image(const ImageParams& im, const NandGeometry& g, std::string* error) {
  uint32_t k = g.pages_per_block;
  bool ok = im.leb_count > 0 && im.leb_count <= g.block_count;
  if (im.policy == PolicyKind::kHubi)
    ok = ok && im.data_pages >= 1 && 1u + im.data_pages + im.log_pages <= k;
  else
    ok = ok && im.data_pages == k - 1 && im.log_pages == 0;
  if (im.policy == PolicyKind::kPubi)
    ok = ok && im.partition_data >= 1 && im.partition_log >= 1 &&
         im.leb_count % im.partition_data == 0;
  if (!ok) {
    *error = fmt::format(
        "EC headers describe an image that does not fit this flash (policy {}, d {}, l {}, "
        "D {}, L {}, {} LEBs)",
        policy_name(im.policy), im.data_pages, im.log_pages, im.partition_data,
        im.partition_log, im.leb_count);
    return -EINVAL;
  }
  return 0;
}

}  // namespace

int Ftl::format(std::shared_ptr<NandMedia> media, const FtlOptions& opts,
                std::unique_ptr<Ftl>* out, std::string* error) {
  if (!media) {
    *error = "no flash media";
    return -EINVAL;
  }
  const NandGeometry& g = media->geometry();
  std::unique_ptr<Ftl> f(new Ftl(media, opts));
  for (uint32_t b : opts.factory_bad) f->nand_->set_factory_bad(b);

  ImageParams im;
  im.policy = opts.policy;
  uint32_t k = g.pages_per_block;
  if (opts.policy == PolicyKind::kHubi) {
    uint32_t d, l;
    if (int r = hubi_layout(k, opts.data_pages, opts.log_pages, &d, &l, error); r < 0) return r;
    im.data_pages = static_cast<uint16_t>(d);
    im.log_pages = static_cast<uint16_t>(l);
  } else {
    im.data_pages = static_cast<uint16_t>(k - 1);
  }
  if (opts.policy == PolicyKind::kPubi) {
    if (opts.partition_data < 1 || opts.partition_log < 1 || opts.partition_data > 4096 ||
        opts.partition_log > 4096) {
      *error = "pubi needs at least one data and one log block per partition";
      return -EINVAL;
    }
    im.partition_data = static_cast<uint16_t>(opts.partition_data);
    im.partition_log = static_cast<uint16_t>(opts.partition_log);
  }
  uint32_t good = 0;
  for (uint32_t b = 0; b < g.block_count; ++b)
    if (!f->nand_->is_bad(b)) ++good;
  // Reserve: grown bad blocks, one PEB for wear levelling, merge targets
  // (hubi's background mode keeps a few erased ones ready).
  uint32_t beb = (g.block_count * opts.bad_reserve_per_1024 + 1023) / 1024;
  uint32_t reserve = beb + 1 + (opts.policy == PolicyKind::kHubi ? 3 : 2);
  if (good <= reserve + 1) {
    *error = fmt::format("flash too small: {} good blocks, {} needed in reserve", good, reserve);
    return -ENOSPC;
  }
  uint32_t usable = good - reserve;
  if (opts.policy == PolicyKind::kPubi) {
    uint32_t parts = usable / (opts.partition_data + opts.partition_log);
    if (parts == 0) {
      *error = fmt::format("flash too small for one pubi partition ({} + {} blocks)",
                           opts.partition_data, opts.partition_log);
      return -ENOSPC;
    }
    im.leb_count = parts * opts.partition_data;
  } else {
    im.leb_count = usable;
  }
  std::random_device rd;
  im.image_seq = rd();
  f->wl_->set_image(im);

  for (uint32_t b = 0; b < g.block_count; ++b) {
    if (f->nand_->is_bad(b)) {
      f->wl_->add_peb(b, PebState::kBad, 0, true);
      continue;
    }
    HeaderStatus st;
    EcHeader old;
    uint64_t ec = 0;
    if (f->io_->read_ec_header(b, &st, &old) == 0 && st == HeaderStatus::kValid)
      ec = old.erase_count;
    EcHeader h;
    h.erase_count = ec + 1;
    h.image = im;
    int r = f->io_->erase(b);
    if (r == 0) r = f->io_->write_ec_header(b, h);
    if (r < 0) {
      if (f->nand_->power_lost()) {
        *error = "power lost during format";
        return -EIO;
      }
      f->wl_->add_peb(b, PebState::kUsed, ec, true);
      f->wl_->mark_bad(b);
      continue;
    }
    f->wl_->add_peb(b, PebState::kFree, h.erase_count, true);
  }
  f->init_layers(im);
  f->policy_->init_empty();
  if (int r = f->nand_->sync(); r < 0) {
    *error = "cannot sync the flash file";
    return r;
  }
  *out = std::move(f);
  return 0;
}

int Ftl::attach(std::shared_ptr<NandMedia> media, const FtlOptions& opts,
                std::unique_ptr<Ftl>* out, std::string* error, AttachReport* report) {
  if (!media) {
    *error = "no flash media";
    return -EINVAL;
  }
  auto w0 = std::chrono::steady_clock::now();
  std::unique_ptr<Ftl> f(new Ftl(media, opts));
  int64_t c0 = f->clock_.now_ns();
  ScanResult scan;
  if (int r = scan_flash(f->io_.get(), &scan, error); r < 0) {
    if (error->empty()) *error = "scan failed (no power)";
    return r;
  }
  if (!scan.formatted) {
    *error = "the flash holds no FTL image (no valid EC header): format it first";
    return -ENODATA;
  }
  if (int r = validate_image(scan.image, media->geometry(), error); r < 0) return r;
  int64_t scan_ns = f->clock_.now_ns() - c0;
  f->init_layers(scan.image);
  if (int r = f->policy_->attach(scan); r < 0) {
    *error = "cannot rebuild the mapping from the scan";
    return r;
  }
  uint64_t to_erase = f->wl_->erase_pending();
  uint64_t relocs = f->ctx_.stats.merges[static_cast<int>(MergeKind::kRelocate)];
  if (int r = f->policy_->recover(); r < 0) {
    *error = "recovery after attach failed";
    return r;
  }
  if (report) {
    report->wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
    report->flash_ns = f->clock_.now_ns() - c0;
    report->scan_flash_ns = scan_ns;
    report->page_reads = f->nand_->counters().page_reads;
    report->tag_reads = f->nand_->counters().oob_reads;
    report->erased = to_erase;
    report->relocated = f->ctx_.stats.merges[static_cast<int>(MergeKind::kRelocate)] - relocs;
    report->scan = std::move(scan);
    report->scan.pebs.clear();
  }
  *out = std::move(f);
  return 0;
}

int Ftl::fail(int r) {
  if (r < 0 && nand_->power_lost()) dead_ = true;
  return r;
}

int Ftl::after_write(uint64_t pages) {
  // Scrub PEBs whose reads needed the ECC.
  while (!ctx_.scrub.empty()) {
    uint32_t peb = *ctx_.scrub.begin();
    ctx_.scrub.erase(ctx_.scrub.begin());
    if (wl_->state(peb) != PebState::kUsed) continue;
    int r = policy_->relocate(peb);
    if (r == -EIO && nand_->power_lost()) return fail(r);
    if (r < 0 && r != -EBUSY) HS_WARN("ftl: scrubbing PEB {} failed: {}", peb, r);
  }
  // Static wear levelling, at most one move per few erases so that a burst
  // of moves never lands on one write.
  if (wl_->erase_count_total() >= last_wl_erases_ + 8) {
    last_wl_erases_ = wl_->erase_count_total();
    std::set<uint32_t> skip;
    for (int attempt = 0; attempt < 4; ++attempt) {
      uint32_t peb;
      if (!wl_->pick_wear_level_source(skip, &peb)) break;
      int r = policy_->relocate(peb);
      if (r == -EBUSY) {
        skip.insert(peb);
        continue;
      }
      if (r == -EIO && nand_->power_lost()) return fail(r);
      // Wear levelling is best effort: the write itself succeeded.
      if (r < 0) HS_WARN("ftl: wear-levelling move of PEB {} failed: {}", peb, r);
      break;
    }
  }
  if (ctx_.background) {
    uint64_t steps = uint64_t(policy_->background_steps_per_page()) * pages;
    for (uint64_t i = 0; i < steps && policy_->background_pending() &&
                         policy_->background_behind();
         ++i)
      if (int r = policy_->background_step(); r < 0) return fail(r);
  }
  return 0;
}

int Ftl::check_range(uint64_t sector, uint64_t count) const {
  if (dead_) return -EIO;
  if (sector > sector_count() || count > sector_count() - sector) return -EINVAL;
  return 0;
}

namespace {

// Cuts [sector, sector + count) at LEB boundaries: run(leb, first page,
// pages, index of that page in the range) for each piece in order, until
// one returns an error.
template <typename Run>
int for_each_leb_run(uint64_t sector, uint64_t count, uint32_t ppl, Run&& run) {
  for (uint64_t i = 0; i < count;) {
    const uint64_t s = sector + i;
    const uint32_t leb = static_cast<uint32_t>(s / ppl), lpn = static_cast<uint32_t>(s % ppl);
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(count - i, ppl - lpn));
    if (int r = run(leb, lpn, n, i); r < 0) return r;
    i += n;
  }
  return 0;
}

}  // namespace

int Ftl::read_sectors(uint64_t sector, uint64_t count, char* buf) {
  if (int r = check_range(sector, count); r < 0) return r;
  uint32_t ppl = pages_per_leb();
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t s = sector + i;
    int r = cache_->read(static_cast<uint32_t>(s / ppl), static_cast<uint32_t>(s % ppl),
                         buf + i * sector_size());
    if (r < 0 && r != -EUCLEAN) return fail(r);
  }
  return 0;
}

int Ftl::write_sectors(uint64_t sector, uint64_t count, const char* buf) {
  if (int r = check_range(sector, count); r < 0) return r;
  const uint32_t ppl = pages_per_leb();
  auto write_run = [&](uint32_t leb, uint32_t lpn, uint32_t n, uint64_t i) {
    const char* data = buf + i * sector_size();
    if (n == ppl) {
      // A whole LEB bypasses the cache (as mtdblock does for whole blocks).
      cache_->forget(leb);
      std::vector<PageWrite> w(ppl);
      for (uint32_t p = 0; p < ppl; ++p) w[p] = {p, data + uint64_t(p) * sector_size()};
      if (int r = policy_->write_pages(leb, w); r < 0) return fail(r);
      return 0;
    }
    for (uint32_t p = 0; p < n; ++p)
      if (int r = cache_->write(leb, lpn + p, data + uint64_t(p) * sector_size()); r < 0) return fail(r);
    return 0;
  };
  if (int r = for_each_leb_run(sector, count, ppl, write_run); r < 0) return r;
  return after_write(count);
}

int Ftl::trim_sectors(uint64_t sector, uint64_t count) {
  if (int r = check_range(sector, count); r < 0) return r;
  const uint32_t ppl = pages_per_leb();
  return for_each_leb_run(sector, count, ppl, [&](uint32_t leb, uint32_t lpn, uint32_t n, uint64_t) {
    cache_->trim(leb, lpn, n);
    if (n == ppl) cache_->forget(leb);
    if (int r = policy_->trim(leb, lpn, n); r < 0) return fail(r);
    return 0;
  });
}

int Ftl::read_leb(uint32_t leb, char* buf) {
  if (leb >= leb_count()) return -EINVAL;
  return read_sectors(uint64_t(leb) * pages_per_leb(), pages_per_leb(), buf);
}

int Ftl::write_leb(uint32_t leb, const char* buf) {
  if (leb >= leb_count()) return -EINVAL;
  return write_sectors(uint64_t(leb) * pages_per_leb(), pages_per_leb(), buf);
}

int Ftl::unmap_leb(uint32_t leb) {
  if (leb >= leb_count()) return -EINVAL;
  return trim_sectors(uint64_t(leb) * pages_per_leb(), pages_per_leb());
}

int Ftl::flush() {
  if (dead_) return -EIO;
  if (int r = cache_->flush(); r < 0) return fail(r);
  if (int r = policy_->make_durable(); r < 0) return fail(r);
  return fail(nand_->sync());
}

int Ftl::close() {
  if (dead_) return -EIO;
  if (int r = flush(); r < 0) return r;
  if (int r = policy_->finish_background(); r < 0) return fail(r);
  if (int r = wl_->drain(); r < 0) return fail(r);
  return fail(nand_->sync());
}

int Ftl::idle_until(int64_t t_ns) {
  if (dead_) return -EIO;
  while (clock_.now_ns() < t_ns && ctx_.background && policy_->background_pending())
    if (int r = policy_->background_step(); r < 0) return fail(r);
  clock_.advance_to(t_ns);
  return 0;
}

int Ftl::check(std::string* error) const { return policy_->check(error); }

}  // namespace hybridstore::ftl
