#include "ftl/nand_model.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace hybridstore::ftl {

NandModel::NandModel(std::shared_ptr<NandMedia> media, const NandModelOptions& opts,
                     VirtualClock* clock)
    : media_(std::move(media)), opts_(opts), clock_(clock ? clock : &own_clock_),
      rng_(opts.seed) {}

bool NandModel::addr_ok(uint32_t block, uint32_t page) const {
  return block < geometry().block_count && page < geometry().pages_per_block;
}

bool NandModel::cut_now() {
  ++mutations_;
  if (cut_at_ && mutations_ >= cut_at_) {
    power_lost_ = true;
    // How the operation tears depends on where the cut falls, so a sweep over
    // cut positions sees every kind of damage.
    rng_.seed(opts_.seed * 0x9e3779b97f4a7c15ull + mutations_);
    return true;
  }
  return false;
}

void NandModel::arm_power_cut(uint64_t nth_mutation) {
  cut_at_ = nth_mutation ? mutations_ + nth_mutation : 0;
}

int NandModel::read_page(uint32_t block, uint32_t page, char* data, char* oob) {
  if (power_lost_) return -EIO;
  if (!addr_ok(block, page)) return -EINVAL;
  const NandGeometry& g = geometry();
  if (data) {
    clock_->advance(opts_.timing.t_read_ns + opts_.timing.t_xfer_ns);
    ++counters_.page_reads;
  } else {
    clock_->advance(opts_.timing.t_read_ns + opts_.timing.t_xfer_ns * g.oob_size / g.page_size);
    ++counters_.oob_reads;
  }
  media_->read(block, page, data, oob);
  if (!data) return 0;
  if (opts_.uncorrectable_rate > 0 &&
      std::uniform_real_distribution<double>(0, 1)(rng_) < opts_.uncorrectable_rate) {
    // More flips than the ECC can fix: the data comes back damaged.
    for (int i = 0; i < 16; ++i) {
      uint64_t bit = rng_() % (uint64_t(g.page_size) * 8);
      data[bit / 8] = static_cast<char>(data[bit / 8] ^ (1 << (bit % 8)));
    }
    ++counters_.uncorrectable;
    return -EBADMSG;
  }
  if (opts_.bitflip_rate > 0 &&
      std::uniform_real_distribution<double>(0, 1)(rng_) < opts_.bitflip_rate) {
    ++counters_.corrected;
    return -EUCLEAN;
  }
  return 0;
}

void NandModel::tear_program(uint32_t block, uint32_t page, const char* data, const char* oob) {
  const NandGeometry& g = geometry();
  std::vector<char> buf(g.page_size + g.oob_size, static_cast<char>(0xff));
  if (data) memcpy(buf.data(), data, g.page_size);
  if (oob) memcpy(buf.data() + g.page_size, oob, g.oob_size);
  // Ways a program stops half-way: the cells of a prefix got their charge and
  // the rest none; every cell got some (each bit that should have gone to 0
  // did so with probability 1/4, 1/2 or 3/4); or the spare area finished and
  // the data did not (so the tag reads valid and only the data checksum can
  // tell).
  uint64_t mode = rng_() % 5;
  if (mode == 0) {
    size_t cut = rng_() % buf.size();
    memset(buf.data() + cut, 0xff, buf.size() - cut);
  } else if (mode == 4) {
    size_t n = g.page_size;
    size_t cut = n / 4 + rng_() % (n / 2);
    memset(buf.data() + cut, 0xff, n - cut);
  } else {
    for (char& c : buf) {
      uint8_t r1 = static_cast<uint8_t>(rng_()), r2 = static_cast<uint8_t>(rng_() >> 8);
      uint8_t keep_one = mode == 1 ? (r1 | r2) : mode == 2 ? r1 : (r1 & r2);
      c = static_cast<char>(static_cast<uint8_t>(c) | keep_one);
    }
  }
  bool all_erased = true;
  for (char c : buf)
    if (static_cast<uint8_t>(c) != 0xff) {
      all_erased = false;
      break;
    }
  // A program that changed no cell leaves the page indistinguishable from an
  // erased one: the page counts as unprogrammed.
  if (all_erased) return;
  NandBlockState st;
  media_->get_state(block, &st);
  st.write_ptr = page + 1;
  media_->set_state(block, st);
  media_->write(block, page, buf.data(), buf.data() + g.page_size);
}

int NandModel::program_page(uint32_t block, uint32_t page, const char* data, const char* oob) {
  if (power_lost_) return -EIO;
  if (!addr_ok(block, page)) return -EINVAL;
  NandBlockState st;
  if (!media_->get_state(block, &st)) return -EIO;
  if (page < st.write_ptr) return -EINVAL;  // programmed twice, or out of order
  const NandGeometry& g = geometry();
  clock_->advance(opts_.timing.t_xfer_ns + opts_.timing.t_prog_ns);
  ++counters_.programs;
  if (cut_now()) {
    tear_program(block, page, data, oob);
    return -EIO;
  }
  if (is_bad(block) || failing_program_.count(block)) {
    failing_program_.insert(block);
    tear_program(block, page, data, oob);
    return -EIO;
  }
  // Record the write pointer first: if the process dies between the two
  // stores, the page reads as torn rather than being programmable twice.
  st.write_ptr = page + 1;
  media_->set_state(block, st);
  std::string ff;
  if (!data || !oob) ff.assign(std::max(g.page_size, g.oob_size), static_cast<char>(0xff));
  media_->write(block, page, data ? data : ff.data(), oob ? oob : ff.data());
  return 0;
}

void NandModel::tear_erase(uint32_t block) {
  const NandGeometry& g = geometry();
  // Erase pulses reach some pages fully and leave others half-charged: some
  // pages read erased, others keep their bytes with bits randomly set to 1.
  std::vector<char> data(g.page_size), oob(g.oob_size);
  uint64_t mode = rng_() % 3;
  for (uint32_t p = 0; p < g.pages_per_block; ++p) {
    bool erased_fully = mode == 0 ? (rng_() % 2 == 0) : mode == 1 ? p % 2 == 0 : false;
    media_->read(block, p, data.data(), oob.data());
    for (auto* v : {&data, &oob})
      for (char& c : *v) {
        uint8_t set = erased_fully ? 0xff : static_cast<uint8_t>(rng_() & rng_());
        c = static_cast<char>(static_cast<uint8_t>(c) | set);
      }
    media_->write(block, p, data.data(), oob.data());
  }
  NandBlockState st;
  media_->get_state(block, &st);
  ++st.wear;
  // The chip cannot tell which pages are clean: treat the whole block as
  // programmed until the next erase, so nothing is programmed over residue.
  st.write_ptr = g.pages_per_block;
  media_->set_state(block, st);
}

int NandModel::erase_block(uint32_t block) {
  if (power_lost_) return -EIO;
  if (block >= geometry().block_count) return -EINVAL;
  if (is_bad(block)) return -EIO;
  clock_->advance(opts_.timing.t_erase_ns);
  ++counters_.erases;
  if (cut_now()) {
    tear_erase(block);
    return -EIO;
  }
  NandBlockState st;
  if (!media_->get_state(block, &st)) st = NandBlockState{};
  if (failing_erase_.count(block) || (opts_.endurance && st.wear >= opts_.endurance)) {
    failing_erase_.insert(block);
    ++st.wear;
    st.write_ptr = geometry().pages_per_block;
    media_->set_state(block, st);
    return -EIO;
  }
  media_->erase(block);
  ++st.wear;
  st.write_ptr = 0;
  media_->set_state(block, st);
  failing_program_.erase(block);
  return 0;
}

int NandModel::erase(uint64_t addr, uint64_t len) {
  uint64_t bb = geometry().block_bytes();
  if (len == 0 || addr % bb || len % bb || addr + len > geometry().total_bytes() ||
      addr + len < addr)
    return -EINVAL;
  for (uint64_t a = addr; a < addr + len; a += bb)
    if (int r = erase_block(static_cast<uint32_t>(a / bb)); r < 0) return r;
  return 0;
}

bool NandModel::is_bad(uint32_t block) const {
  if (block >= geometry().block_count) return true;
  std::vector<char> oob(geometry().oob_size);
  media_->read(block, 0, nullptr, oob.data());
  return static_cast<uint8_t>(oob[0]) != 0xff;
}

int NandModel::mark_bad(uint32_t block) {
  if (power_lost_) return -EIO;
  if (block >= geometry().block_count) return -EINVAL;
  clock_->advance(opts_.timing.t_xfer_ns + opts_.timing.t_prog_ns);
  media_->write_oob_byte(block, 0, 0, 0x00);
  NandBlockState st;
  if (!media_->get_state(block, &st)) st = NandBlockState{};
  st.flags |= kBlockGrownBad;
  media_->set_state(block, st);
  return 0;
}

void NandModel::set_factory_bad(uint32_t block) {
  if (block >= geometry().block_count) return;
  media_->write_oob_byte(block, 0, 0, 0x00);
  NandBlockState st;
  if (!media_->get_state(block, &st)) st = NandBlockState{};
  st.flags |= kBlockFactoryBad;
  media_->set_state(block, st);
}

uint32_t NandModel::wear(uint32_t block) const {
  NandBlockState st;
  if (block >= geometry().block_count || !media_->get_state(block, &st)) return 0;
  return st.wear;
}

int NandModel::sync() {
  if (power_lost_) return -EIO;
  return media_->sync();
}

}  // namespace hybridstore::ftl
