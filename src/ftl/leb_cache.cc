#include "ftl/leb_cache.h"

#include <cstring>

namespace hybridstore::ftl {

const char* cache_mode_name(CacheMode m) {
  switch (m) {
    case CacheMode::kOff: return "off";
    case CacheMode::kLazy: return "lazy";
    case CacheMode::kMtdblock: return "mtdblock";
  }
  return "?";
}

bool parse_cache_mode(const std::string& s, CacheMode* out) {
  if (s == "off") *out = CacheMode::kOff;
  else if (s == "lazy") *out = CacheMode::kLazy;
  else if (s == "mtdblock") *out = CacheMode::kMtdblock;
  else return false;
  return true;
}

LebCache::LebCache(MappingPolicy* policy, CacheMode mode, uint32_t page_size,
                   uint32_t pages_per_leb)
    : policy_(policy), mode_(mode), page_size_(page_size), ppl_(pages_per_leb) {
  if (mode_ != CacheMode::kOff) {
    pages_.resize(uint64_t(page_size) * pages_per_leb);
    valid_.assign(pages_per_leb, false);
    dirty_.assign(pages_per_leb, false);
  }
}

int LebCache::flush() {
  if (dirty_count_ == 0) return 0;
  std::vector<PageWrite> w;
  w.reserve(dirty_count_);
  for (uint32_t p = 0; p < ppl_; ++p)
    if (dirty_[p]) w.push_back({p, pages_.data() + uint64_t(p) * page_size_});
  int r = policy_->write_pages(static_cast<uint32_t>(leb_), w);
  if (r < 0) return r;
  dirty_.assign(ppl_, false);
  dirty_count_ = 0;
  return 0;
}

int LebCache::switch_to(uint32_t leb) {
  if (leb_ == leb) return 0;
  if (int r = flush(); r < 0) return r;
  leb_ = leb;
  valid_.assign(ppl_, false);
  if (mode_ == CacheMode::kMtdblock) {
    for (uint32_t p = 0; p < ppl_; ++p) {
      if (int r = policy_->read_page(leb, p, pages_.data() + uint64_t(p) * page_size_); r < 0) {
        leb_ = -1;
        return r;
      }
      valid_[p] = true;
    }
  }
  return 0;
}

int LebCache::write(uint32_t leb, uint32_t lpn, const char* buf) {
  if (mode_ == CacheMode::kOff) return policy_->write_page(leb, lpn, buf);
  if (leb >= policy_->leb_count() || lpn >= ppl_) return -EINVAL;
  if (int r = switch_to(leb); r < 0) return r;
  memcpy(pages_.data() + uint64_t(lpn) * page_size_, buf, page_size_);
  valid_[lpn] = true;
  if (!dirty_[lpn]) {
    dirty_[lpn] = true;
    ++dirty_count_;
  }
  return 0;
}

int LebCache::read(uint32_t leb, uint32_t lpn, char* buf) {
  if (mode_ != CacheMode::kOff && leb_ == leb && lpn < ppl_ && valid_[lpn]) {
    memcpy(buf, pages_.data() + uint64_t(lpn) * page_size_, page_size_);
    return 0;
  }
  return policy_->read_page(leb, lpn, buf);
}

void LebCache::forget(uint32_t leb) {
  if (leb_ != leb) return;
  leb_ = -1;
  dirty_count_ = 0;
  if (mode_ != CacheMode::kOff) {
    dirty_.assign(ppl_, false);
    valid_.assign(ppl_, false);
  }
}

void LebCache::trim(uint32_t leb, uint32_t first, uint32_t count) {
  if (leb_ != leb) return;
  for (uint32_t p = first; p < first + count && p < ppl_; ++p) {
    if (dirty_[p]) --dirty_count_;
    dirty_[p] = false;
    valid_[p] = false;
  }
}

}  // namespace hybridstore::ftl
