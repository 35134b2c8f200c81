#include "hybridstore/store/onode_checkpointer.h"

#include <pthread.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <map>
#include <shared_mutex>
#include <string>
#include <vector>

#include "hscommon/log.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/store/collections.h"
#include "hybridstore/store/onode_store.h"
#include "hybridstore/store/store_perf.h"

namespace hybridstore {

namespace {
// How often the thread looks at the ring and the dirty count between
// rounds: cheap (two counters), and short beside a round's period.
constexpr std::chrono::milliseconds kPoll{50};
// Dirty onodes a round writes per hold of a collection's lock. A round
// with hundreds of one collection's onodes held it for tens of ms, every
// transaction on that collection waiting (docs/small-writes.md 13.16);
// encoding this many takes about a millisecond. Each hold reads the
// committed number afresh, so a chunk is checkpointed as a whole round's
// collection was.
constexpr size_t kOnodesPerHold = 32;
}  // namespace

OnodeCheckpointer::OnodeCheckpointer(rocksdb::DB* db, OnodeStore* onodes, CollectionTable* colls,
                                     KvCommitter* committer, CommitJournal* journal, const Options& opts,
                                     StorePerf* perf)
    : db_(db), onodes_(onodes), colls_(colls), committer_(committer), journal_(journal), opts_(opts), perf_(perf) {}

OnodeCheckpointer::~OnodeCheckpointer() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OnodeCheckpointer::start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hs-onode-ckpt");
    loop();
  });
}

void OnodeCheckpointer::stop() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  done_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (committer_->error() == 0) checkpoint();
}

void OnodeCheckpointer::wake() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    woken_ = true;
  }
  cv_.notify_one();
}

bool OnodeCheckpointer::due() const {
  // The ring half needed helps only when kClean is what keeps its oldest
  // record (else each round would be a sync that frees nothing).
  return (journal_->needed() * 2 > journal_->size() && journal_->keeps_oldest(CommitJournal::TailHold::kClean)) ||
         onodes_->dirty_count() * 2 > opts_.dirty_max || onodes_->dirty_bytes() * 2 > opts_.dirty_bytes_max;
}

bool OnodeCheckpointer::dirty_over() const {
  return onodes_->dirty_count() > opts_.dirty_max || onodes_->dirty_bytes() > opts_.dirty_bytes_max;
}

void OnodeCheckpointer::loop() {
  auto next = std::chrono::steady_clock::now() + opts_.period;
  for (;;) {
    bool woken;
    {
      std::unique_lock<std::mutex> l(mutex_);
      cv_.wait_for(l, std::min<std::chrono::steady_clock::duration>(kPoll, opts_.period),
                   [&] { return stopping_ || woken_; });
      if (stopping_) return;
      woken = woken_;
      woken_ = false;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!woken && now < next && !due()) continue;
    next = now + opts_.period;
    const int r = checkpoint();
    done_cv_.notify_all();
    if (r < 0) return;  // the store failed: nothing more is written
  }
}

void OnodeCheckpointer::throttle() {
  // Whichever hold keeps the ring: a transaction admitted now must find
  // room for its record, or a put of a dirty object queued behind a full
  // ring could never commit while the ring waits for that object's
  // checkpoint, which waits for the put (OnodeStore::put_dirty). A writer
  // held here never reaches CommitJournal::reserve, so it asks for room as
  // reserve would: without that, a ring kept by the applied-data hold while
  // no ring data was pending (transactions of attributes alone) waited for
  // good (store_test's AttrSynthetic on `on`).
  auto ring_over = [&] { return journal_->needed() * 4 > journal_->size() * 3; };
  auto over = [&] { return ring_over() || dirty_over(); };
  if (!over()) return;
  for (;;) {
    // Outside mutex_: the room-wanted callback wakes this checkpointer too.
    if (ring_over())
      journal_->want_room();
    else
      wake();
    std::unique_lock<std::mutex> l(mutex_);
    if (stopping_ || committer_->error() != 0 || !over()) return;
    done_cv_.wait_for(l, std::chrono::milliseconds(10));
    if (stopping_ || committer_->error() != 0 || !over()) return;
  }
}

int OnodeCheckpointer::checkpoint() {
  std::lock_guard<std::mutex> one(round_mutex_);
  if (int e = committer_->error(); e) return e;
  // Every transaction numbered up to `last` noted its dirty objects before
  // it was submitted: each is among the keys read next, or was written
  // since with that transaction's change (first_seq moves past it).
  const uint64_t last = committer_->last_seq();
  const std::vector<ObjectKey> keys = onodes_->dirty_keys();
  if (keys.empty() && last == last_round_seq_) return 0;
  const uint64_t started_ns = perf_now_ns();
  std::map<std::string, std::vector<ObjectKey>> by_coll;
  for (const auto& k : keys) by_coll[k.first].push_back(k);
  uint64_t written = 0, postponed = 0, holds = 0;
  for (const auto& [name, ks] : by_coll) {
    auto st = colls_->state(CollectionId(name));
    for (size_t from = 0; from < ks.size(); from += kOnodesPerHold) {
      const size_t to = std::min(ks.size(), from + kOnodesPerHold);
      std::unique_lock<std::shared_mutex> lock(st->lock);
      ++holds;
      // Read before any object's committed change (OnodeStore::put_dirty).
      const uint64_t committed = committer_->committed_seq();
      rocksdb::WriteBatch b;
      std::vector<std::pair<ObjectKey, OnodeStore::Checkpointed>> done;
      for (size_t i = from; i < to; ++i) {
        OnodeStore::Checkpointed c;
        if (onodes_->put_dirty(&b, ks[i], committed, &c))
          done.emplace_back(ks[i], std::move(c));
        else
          ++postponed;
      }
      if (done.empty()) continue;
      // Not synced: the ring keeps the deltas until the sync below.
      if (b.Count() > 0)
        if (rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), &b); !s.ok()) {
          committer_->fail(-EIO, "writing dirty onodes to RocksDB failed: " + s.ToString());
          return -EIO;
        }
      for (const auto& [k, c] : done) onodes_->wrote(k, c);
      written += done.size();
    }
  }
  // The records the ring still needs for deltas start at the first dirty
  // object's first transaction.
  const uint64_t first = onodes_->first_dirty_seq();
  const uint64_t clean = first == UINT64_MAX ? last : std::min(last, first - 1);
  if (clean > last_clean_) {
    rocksdb::WriteBatch mark;
    std::string failure;
    if (int r = committer_->sync_tail_hold(CommitJournal::TailHold::kClean, &mark, committer_->journal_seq_of(clean),
                                           &failure);
        r < 0) {
      committer_->fail(r, failure);
      return r;
    }
  }
  last_round_seq_ = last;
  last_clean_ = std::max(last_clean_, clean);
  if (perf_) {
    perf_->set.inc(perf_->small_write_ckpt_rounds);
    perf_->set.inc(perf_->small_write_ckpt_onodes, written);
    perf_->set.inc(perf_->small_write_ckpt_postponed, postponed);
    perf_->set.inc(perf_->small_write_ckpt_holds, holds);
    perf_->set.tinc(perf_->small_write_ckpt_lat, perf_now_ns() - started_ns);
  }
  std::lock_guard<std::mutex> l(mutex_);
  ++stats_.rounds;
  stats_.onodes += written;
  stats_.postponed += postponed;
  stats_.holds += holds;
  return 0;
}

OnodeCheckpointer::Stats OnodeCheckpointer::stats() const {
  std::lock_guard<std::mutex> l(mutex_);
  return stats_;
}

}  // namespace hybridstore
