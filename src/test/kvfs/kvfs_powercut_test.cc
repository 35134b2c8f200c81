// Power cuts under a KvFs (docs/kvfs.md 3.7, 8.2): a scripted workload of
// creates, appends, syncs, renames over names, unlinks, the commit
// journal's ring made, growth through the lender, a compaction and free
// space given back (a RETURN), cut at
// every device write (with the cache lost,
// kept at random, or the cut write torn). After the cut the
// kvfs must check clean (but for a torn superblock slot that is not
// current) and mount (replay checks that no block has two owners), and what it
// holds must be the state after some operation between the last completed
// sync and the cut: every synced byte there exactly, every name change
// before the sync present, the log a prefix; and a ring, if the log has
// one, is the one made (if its making returned) and holds only zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>

#include <fmt/format.h>

#include "common_helpers.h"
#include "hybridstore/kvfs/kvfs_check.h"
#include "kvfs/kvfs_fs_util.h"
#include "testing/fault_device.h"
#include "testing/fault_injection.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

// What a kvfs holds: name -> bytes.
using Namespace = std::map<std::string, std::string>;

// What the log says after an operation: name -> (file, its last logged
// size). Kept as a reference into the script's files rather than a copy of
// the bytes, since a state is recorded after every operation and copying
// every file each time made the cut loops spend their time in memcpy.
struct LoggedFile {
  int id;
  uint64_t logged;
};
using NameState = std::map<std::string, LoggedFile>;

class Script {
 public:
  Script(KvFs* fs, uint64_t seed) : fs_(fs), rng_(seed) { states_.push_back({}); }

  // Runs until an operation fails (the power went) or the script ends.
  void run() {
    for (int round = 0; round < 6 && ok_; ++round) play_round(round);
  }

  const std::vector<NameState>& states() const { return states_; }
  // Every file's bytes as appended, by id; moved out once the script is done.
  std::map<int, std::string> take_contents() {
    std::map<int, std::string> out;
    for (auto& [id, f] : files_) out[id] = std::move(f.content);
    return out;
  }
  size_t acked() const { return acked_; }
  // The ring make_journal returned (empty unless it did), and the op that
  // made it.
  const std::vector<KvFsExtent>& ring() const { return ring_; }
  size_t ring_op() const { return ring_op_; }
  bool finished() const { return ok_; }
  uint64_t returned() const { return returned_; }
  const std::string& failure() const { return failure_; }

 private:
  struct File {
    std::unique_ptr<KvFsWritableFile> handle;
    std::string content;
    uint64_t logged = 0;
    std::string name;  // empty once the name went elsewhere
  };

  void play_round(int round) {
    const std::string wal = fmt::format("wal{}", round % 2);
    open(0, wal);
    for (int i = 0; i < 3 && ok_; ++i) {
      append(0, 1 + rng_() % (2 * kB));
      sync(0);
    }
    const std::string sst = fmt::format("{:06}.sst", round);
    open(1, sst);
    for (int i = 0; i < 12 && ok_; ++i) append(1, 20 * kB + rng_() % kB);
    sync(1);
    close(1);
    if (round % 2 == 1) rename(sst, "CURRENT");
    if (round == 1) {
      step([&](std::string* why) { return fs_->make_journal(128 * kB, &ring_, why); }, true);
      ring_op_ = states_.size() - 1;
    }
    if (round >= 2 && round % 2 == 0) unlink(fmt::format("{:06}.sst", round - 2));
    if (round == 3) step([&](std::string* why) { return fs_->compact(why); }, true);
    append(0, 100);
    close(0);
    if (round == 4) step([&](std::string* why) { return fs_->sync_log(why); }, true);
    if (round == 4) {
      // A table that grows the kvfs and goes, as a compaction's input does:
      // what it took is free in whole units, and goes back.
      open(1, "big.sst");
      for (int i = 0; i < 8 && ok_; ++i) append(1, 256 * kB);
      sync(1);
      close(1);
      unlink("big.sst");
      step([&](std::string* why) { return fs_->sync_log(why); }, true);
      step(
          [&](std::string* why) {
            uint64_t returned = 0;
            const int r = fs_->give_back(0, kG, &returned, why);
            returned_ += returned;
            return r;
          },
          true);
    }
  }

  // One operation: `commits` says a 0 from it makes everything before it
  // durable. The state after it is recorded even when it failed: its
  // record may have been queued, or even written.
  template <typename Fn>
  void step(Fn fn, bool commits) {
    if (!ok_) return;
    std::string why;
    const int r = fn(&why);
    ok_ = r == 0;
    if (!ok_) failure_ = fmt::format("op {}: {} ({})", states_.size(), why, r);
    states_.push_back(names());
    if (ok_ && commits) acked_ = states_.size() - 1;
  }

  NameState names() const {
    NameState n;
    for (const auto& [id, f] : files_)
      if (!f.name.empty()) n[f.name] = LoggedFile{id, f.logged};
    return n;
  }

  void forget(const std::string& name) {
    for (auto& [id, f] : files_)
      if (f.name == name) f.name.clear();
  }

  void open(int slot, const std::string& name) {
    step(
        [&](std::string* why) {
          forget(name);
          const int id = next_id_++;
          File& f = files_[id];
          f.name = name;
          slots_[slot] = id;
          return fs_->open_writable("db", name, &f.handle, why);
        },
        false);
  }
  void append(int slot, size_t len) {
    step(
        [&](std::string* why) {
          File& f = files_.at(slots_[slot]);
          std::string data(len, '\0');
          for (size_t i = 0; i < len; i += 8) {
            const uint64_t word = rng_();
            std::memcpy(data.data() + i, &word, std::min<size_t>(8, len - i));
          }
          f.content += data;
          return f.handle->append(data, why);
        },
        false);
  }
  void sync(int slot) {
    step(
        [&](std::string* why) {
          File& f = files_.at(slots_[slot]);
          f.logged = f.content.size();
          return f.handle->sync(why);
        },
        true);
  }
  void close(int slot) {
    step(
        [&](std::string* why) {
          File& f = files_.at(slots_[slot]);
          f.logged = f.content.size();
          const int r = f.handle->close(why);
          f.handle.reset();
          return r;
        },
        false);
  }
  void rename(const std::string& src, const std::string& dst) {
    step(
        [&](std::string* why) {
          forget(dst);
          for (auto& [id, f] : files_)
            if (f.name == src) f.name = dst;
          return fs_->rename("db", src, "db", dst, why);
        },
        false);
  }
  void unlink(const std::string& name) {
    step(
        [&](std::string* why) {
          forget(name);
          return fs_->unlink("db", name, why);
        },
        false);
  }

  KvFs* fs_;
  std::mt19937_64 rng_;
  std::map<int, File> files_;
  std::map<int, int> slots_;
  int next_id_ = 0;
  std::vector<NameState> states_;
  size_t acked_ = 0;
  bool ok_ = true;
  std::string failure_;
  std::vector<KvFsExtent> ring_;
  size_t ring_op_ = SIZE_MAX;
  uint64_t returned_ = 0;
};

KvFsParams cut_params() {
  KvFsParams p = test_params();
  p.initial_size = kG;
  p.log_segment = kA;
  return p;
}

// Whether the kvfs's names and bytes are exactly one recorded state.
bool holds_state(const Namespace& found, const NameState& state, const std::map<int, std::string>& contents) {
  if (found.size() != state.size()) return false;
  auto f = found.begin();
  for (auto s = state.begin(); s != state.end(); ++s, ++f) {
    if (f->first != s->first || f->second.size() != s->second.logged) return false;
    const std::string& bytes = contents.at(s->second.id);
    if (bytes.compare(0, s->second.logged, f->second) != 0) return false;
  }
  return true;
}

Namespace read_namespace(KvFs* fs) {
  Namespace n;
  std::vector<std::string> names;
  std::string why;
  EXPECT_EQ(fs->list("db", &names, &why), 0) << why;
  for (const std::string& name : names) n[name] = read_all(fs, "db", name);
  return n;
}

// The device writes of the whole script, counted on a run without a cut.
uint64_t script_writes(uint64_t seed) {
  TempDir dir("kvfs-cut-count");
  FaultSettings fs;
  fs.enabled = true;
  auto injector = std::make_shared<FaultInjector>(dir.path(), fs);
  FaultInjectionDevice dev(open_kvfs_media(dir.file("dev")), injector);
  FakeLender lender(12 * kG);
  auto kvfs = format_and_mount(&dev, &lender, cut_params());
  const uint64_t before = injector->counters().device_writes;
  Script script(kvfs.get(), seed);
  script.run();
  EXPECT_TRUE(script.finished()) << script.failure();
  EXPECT_GE(lender.lent(), 2 * kG) << "the script must grow the kvfs";
  EXPECT_GE(kvfs->generation(), 1u) << "the script must compact the log";
  EXPECT_GT(script.returned(), 0u) << "the script must give space back";
  EXPECT_EQ(lender.taken_back(), script.returned());
  return injector->counters().device_writes - before;
}

// A cut in a compaction's superblock write leaves the new slot torn and the
// old one current: a warning, not an error.
void expect_clean_but_a_torn_slot(const KvFsCheckReport& r) {
  std::string all;
  for (const std::string& p : r.problems) all += "\n  " + p;
  EXPECT_EQ(r.errors, 0u) << all;
  for (const std::string& p : r.problems) EXPECT_NE(p.find("(not current) is bad"), std::string::npos) << p;
}

void cut_at_every_write(bool keep_random, bool tear) {
  const uint64_t seed = test_seed(7);
  const uint64_t total = script_writes(seed);
  constexpr uint64_t kCap = 400;
  const uint64_t cuts = std::min(total, kCap);
  std::printf("kvfs power cut (keep=%s%s, seed %llu): the script makes %llu device writes; cutting at 1..%llu\n",
              keep_random ? "random" : "none", tear ? ", torn" : "", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(cuts));
  for (uint64_t n = 1; n <= cuts; ++n) {
    SCOPED_TRACE(fmt::format("cut at write {} keep={} tear {} seed {}", n, keep_random ? "random" : "none", tear,
                             seed));
    TempDir dir("kvfs-cut", TempDir::Backing::kMemory);
    FaultSettings fs;
    fs.enabled = true;
    fs.seed = seed + n;
    auto injector = std::make_shared<FaultInjector>(dir.path(), fs);
    injector->keep_cached_writes_at_random(keep_random);
    auto dev = std::make_unique<FaultInjectionDevice>(open_kvfs_media(dir.file("dev")), injector);
    FakeLender lender(12 * kG);
    auto kvfs = format_and_mount(dev.get(), &lender, cut_params());
    ASSERT_TRUE(kvfs);
    injector->powercut_after_writes(n, tear);
    auto script = std::make_unique<Script>(kvfs.get(), seed);
    script->run();
    const std::vector<NameState> states = script->states();
    const std::map<int, std::string> contents = script->take_contents();
    const size_t acked = script->acked();
    const std::vector<KvFsExtent> ring = script->ring();
    const size_t ring_op = script->ring_op();
    script.reset();  // its handles close against the dead device
    ASSERT_TRUE(injector->power_is_off());
    kvfs.reset();
    std::string err;
    ASSERT_EQ(injector->restore_power(&err), 0) << err;
    dev.reset();
    auto media = open_kvfs_media(dir.file("dev"));
    // The kvfs's fsck, before the mount as the store's fsck runs it and on
    // the mounted kvfs after.
    KvFsCheckReport check;
    ASSERT_EQ(check_kvfs(media.get(), cut_params(), fs_uuid(), fs_fsid(), KvFsCheckOptions(), &check), 0);
    expect_clean_but_a_torn_slot(check);
    auto after = mount_kvfs(media.get(), nullptr, cut_params());
    ASSERT_TRUE(after);
    ASSERT_EQ(check_mounted_kvfs(after.get(), KvFsCheckOptions(), &check), 0);
    expect_clean_but_a_torn_slot(check);
    const Namespace found = read_namespace(after.get());
    bool matched = false;
    for (size_t k = acked; k < states.size() && !matched; ++k) matched = holds_state(found, states[k], contents);
    ASSERT_TRUE(matched) << fmt::format(
        "the remounted namespace ({} names) is no state between the last sync (op {}) and the cut (op {})",
        found.size(), acked, states.size() - 1);
    const std::vector<KvFsExtent> found_ring = after->journal();
    if (ring_op != SIZE_MAX && acked >= ring_op) {
      ASSERT_FALSE(found_ring.empty()) << "the ring's JOURNAL was durable, and is gone";
    }
    if (!ring.empty() && !found_ring.empty()) {
      ASSERT_EQ(found_ring, ring);
    }
    for (const KvFsExtent& e : found_ring) {
      AlignedBuffer buf(e.length);
      ASSERT_EQ(media->read(e.offset, buf.data(), e.length), 0);
      ASSERT_EQ(std::count(buf.data(), buf.data() + e.length, '\0'), static_cast<long>(e.length))
          << "the ring holds bytes other than zeros";
    }
  }
}

}  // namespace

TEST(KvFsPowerCut, EveryWriteKeepNone) { cut_at_every_write(false, false); }

TEST(KvFsPowerCut, EveryWriteKeepRandom) { cut_at_every_write(true, false); }

// The write the power fails in lands a prefix of its blocks.
TEST(KvFsPowerCut, EveryWriteTorn) { cut_at_every_write(false, true); }
