// Attach after a clean shutdown and after a power cut at every program and
// erase of a scripted sequence: no acknowledged page is lost, the mapping is
// consistent, torn pages are detected and discarded, and the FTL keeps working.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "ftl/ftl_helpers.h"

using namespace hybridstore::ftl;
using namespace hybridstore::ftl::test;

namespace {

enum class OpKind { kWrite, kTrim };
struct Op {
  OpKind kind;
  uint64_t sector;
  uint64_t count;
};

// A sequence that makes every policy merge, shortcut, unmap and trim on a
// handful of LEBs: single pages (log writes), short runs, whole LEBs, trims.
std::vector<Op> make_script(uint32_t ppl, uint32_t lebs, uint32_t l) {
  std::mt19937_64 rng(42);
  std::vector<Op> ops;
  uint64_t n = uint64_t(ppl) * lebs;
  for (int i = 0; i < 70; ++i) {
    uint64_t r = rng() % 20;
    if (r < 11) {
      ops.push_back({OpKind::kWrite, rng() % n, 1});
    } else if (r < 15) {
      uint64_t c = std::max<uint64_t>(l, 2) + rng() % 3;
      uint64_t s = rng() % (n - c);
      ops.push_back({OpKind::kWrite, s, c});
    } else if (r < 17) {
      ops.push_back({OpKind::kWrite, (rng() % lebs) * ppl, ppl});
    } else if (r < 19) {
      ops.push_back({OpKind::kTrim, rng() % (n - 2), 2});
    } else {
      ops.push_back({OpKind::kTrim, (rng() % lebs) * ppl, ppl});
    }
  }
  return ops;
}

// Per sector, the versions a read may return: after a write exactly one; after
// a trim zeros or the version before it (trim is advisory across crashes).
class Allowed {
 public:
  void write(uint64_t s, uint64_t v) { a_[s] = {v}; }
  void trim(uint64_t s) {
    std::set<uint64_t> now = get(s);
    now.insert(0);
    a_[s] = now;
  }
  std::set<uint64_t> get(uint64_t s) const {
    auto it = a_.find(s);
    return it == a_.end() ? std::set<uint64_t>{0} : it->second;
  }

 private:
  std::map<uint64_t, std::set<uint64_t>> a_;
};

std::string verify_allowed(Ftl* ftl, const Allowed& ok, const Allowed* in_flight) {
  uint32_t ss = ftl->sector_size();
  std::string buf(ss, '\0'), zeros(ss, '\0');
  for (uint64_t s = 0; s < ftl->sector_count(); ++s) {
    if (int r = ftl->read_sectors(s, 1, &buf[0]); r < 0)
      return "sector " + std::to_string(s) + ": read error " + std::to_string(r);
    std::set<uint64_t> vs = ok.get(s);
    if (in_flight) {
      auto extra = in_flight->get(s);
      vs.insert(extra.begin(), extra.end());
    }
    bool match = false;
    for (uint64_t v : vs) match = match || buf == (v ? page_content(s, v, ss) : zeros);
    if (!match) {
      uint64_t got;
      memcpy(&got, &buf[8], 8);
      std::string want;
      for (uint64_t v : vs) want += std::to_string(v) + " ";
      return "sector " + std::to_string(s) + ": holds version " + std::to_string(got) +
             (buf == zeros ? " (zeros)" : "") + ", allowed: " + want;
    }
  }
  return "";
}

struct Variant {
  PolicyKind policy;
  bool background;
};

class PowerCutTest : public testing::TestWithParam<Variant> {
 protected:
  FtlOptions opts() const {
    FtlOptions o = small_options(GetParam().policy, 32);
    o.background_merge = GetParam().background;
    return o;
  }
  // Runs the script until it ends or the chip dies. Operations acknowledged
  // (op and flush returned 0) go into *ok; the one that failed into *flight.
  static void run_script(Ftl* ftl, const std::vector<Op>& ops, Allowed* ok, Allowed* flight,
                         bool* died, uint64_t* version) {
    uint32_t ss = ftl->sector_size();
    *died = false;
    for (const Op& op : ops) {
      Allowed pending = *ok;
      int r;
      if (op.kind == OpKind::kWrite) {
        std::string buf;
        for (uint64_t k = 0; k < op.count; ++k) {
          buf += page_content(op.sector + k, ++*version, ss);
          pending.write(op.sector + k, *version);
        }
        r = ftl->write_sectors(op.sector, op.count, buf.data());
      } else {
        for (uint64_t k = 0; k < op.count; ++k) pending.trim(op.sector + k);
        r = ftl->trim_sectors(op.sector, op.count);
      }
      if (r == 0) r = ftl->flush();
      if (r < 0) {
        ASSERT_EQ(r, -EIO);
        ASSERT_TRUE(ftl->dead());
        *flight = pending;
        *died = true;
        return;
      }
      *ok = pending;
    }
  }
};

}  // namespace

TEST_P(PowerCutTest, CleanShutdownKeepsEverything) {
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(opts(), &media);
  ASSERT_TRUE(ftl);
  auto ops = make_script(ftl->pages_per_leb(), 6, ftl->image().log_pages);
  Allowed ok, flight;
  bool died;
  uint64_t version = 0;
  run_script(ftl.get(), ops, &ok, &flight, &died, &version);
  ASSERT_FALSE(died);
  ASSERT_EQ(ftl->close(), 0);
  ftl.reset();
  std::string err;
  AttachReport rep;
  auto again = reattach(media, opts(), &err, &rep);
  ASSERT_TRUE(again) << err;
  EXPECT_EQ(rep.scan.torn, 0u);
  EXPECT_EQ(rep.scan.incomplete, 0u);
  EXPECT_EQ(rep.erased, 0u) << "a clean shutdown leaves nothing stale";
  EXPECT_EQ(verify_allowed(again.get(), ok, nullptr), "");
  EXPECT_EQ(again->check(&err), 0) << err;
}

TEST_P(PowerCutTest, PowerCutAtEveryProgramAndEraseLosesNoAcknowledgedPage) {
  FtlOptions o = opts();
  std::vector<Op> ops;
  uint64_t total = 0;
  {
    std::shared_ptr<NandMedia> media;
    auto ftl = format_fresh(o, &media);
    ASSERT_TRUE(ftl);
    ops = make_script(ftl->pages_per_leb(), 6, ftl->image().log_pages);
    uint64_t before = ftl->nand()->mutations();
    Allowed ok, flight;
    bool died;
    uint64_t version = 0;
    run_script(ftl.get(), ops, &ok, &flight, &died, &version);
    ASSERT_FALSE(died);
    total = ftl->nand()->mutations() - before;
  }
  ASSERT_GT(total, 100u);
  uint64_t torn_seen = 0, incomplete_seen = 0, stale_seen = 0;
  for (uint64_t cut = 1; cut <= total; ++cut) {
    SCOPED_TRACE("power cut at mutation " + std::to_string(cut) + " of " +
                 std::to_string(total));
    std::shared_ptr<NandMedia> media;
    auto ftl = format_fresh(o, &media);
    ASSERT_TRUE(ftl);
    ftl->nand()->arm_power_cut(cut);
    Allowed ok, flight;
    bool died;
    uint64_t version = 0;
    run_script(ftl.get(), ops, &ok, &flight, &died, &version);
    if (HasFatalFailure()) return;
    ASSERT_TRUE(died);
    ftl.reset();
    std::string err;
    AttachReport rep;
    auto again = reattach(media, o, &err, &rep);
    ASSERT_TRUE(again) << err;
    torn_seen += rep.scan.torn;
    incomplete_seen += rep.scan.incomplete;
    stale_seen += rep.erased;
    ASSERT_EQ(again->check(&err), 0) << err;
    ASSERT_EQ(verify_allowed(again.get(), ok, &flight), "");
    // The recovered FTL keeps working, and survives a clean restart.
    std::string p = page_content(5, 999999, again->sector_size());
    ASSERT_EQ(again->write_sectors(5, 1, p.data()), 0);
    ASSERT_EQ(again->close(), 0);
    again.reset();
    auto third = reattach(media, o, &err);
    ASSERT_TRUE(third) << err;
    std::string got(third->sector_size(), '\0');
    ASSERT_EQ(third->read_sectors(5, 1, &got[0]), 0);
    ASSERT_EQ(got, p);
    ASSERT_EQ(third->check(&err), 0) << err;
  }
  // The sequence must really have produced the traces the scan looks for.
  EXPECT_GT(torn_seen, 0u);
  EXPECT_GT(incomplete_seen, 0u);
  EXPECT_GT(stale_seen, 0u);
}

INSTANTIATE_TEST_SUITE_P(Policies, PowerCutTest,
                         testing::Values(Variant{PolicyKind::kUbi, false},
                                         Variant{PolicyKind::kPubi, false},
                                         Variant{PolicyKind::kHubi, false},
                                         Variant{PolicyKind::kHubi, true}),
                         [](const testing::TestParamInfo<Variant>& i) {
                           return std::string(policy_name(i.param.policy)) +
                                  (i.param.background ? "_background" : "");
                         });
