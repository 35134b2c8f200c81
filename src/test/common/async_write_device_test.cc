// Writes that go on while the caller does: what a read or a write of their
// range sees meanwhile, errors, and the drain at the end.
#include "hsio/async_write_device.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

using namespace hybridstore;

namespace {

// Memory with a gate: writes block while it is closed, so a test holds a
// write in flight for as long as it needs to.
class GatedMemoryDevice final : public BlockDevice {
 public:
  explicit GatedMemoryDevice(uint64_t size) : bytes_(size, '\0') {}
  uint64_t size() const override { return bytes_.size(); }
  uint32_t alignment() const override { return 512; }
  std::string backend() const override { return "gated-memory"; }
  std::string path() const override { return "memory"; }
  int read(uint64_t offset, char* buf, uint64_t len) override {
    std::lock_guard<std::mutex> l(mu_);
    std::memcpy(buf, bytes_.data() + offset, len);
    return 0;
  }
  int write(uint64_t offset, const char* buf, uint64_t len) override {
    std::unique_lock<std::mutex> l(mu_);
    ++writers_waiting_;
    cv_.notify_all();
    cv_.wait(l, [&] { return open_; });
    --writers_waiting_;
    if (fail_) return -EIO;
    std::memcpy(bytes_.data() + offset, buf, len);
    return 0;
  }
  int flush() override { return 0; }
  void set_open(bool open) {
    std::lock_guard<std::mutex> l(mu_);
    open_ = open;
    cv_.notify_all();
  }
  void set_fail(bool fail) {
    std::lock_guard<std::mutex> l(mu_);
    fail_ = fail;
  }
  // Blocks until `n` writes wait at the closed gate.
  void await_writers(int n) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return writers_waiting_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string bytes_;
  bool open_ = true;
  bool fail_ = false;
  int writers_waiting_ = 0;
};

struct Fixture {
  GatedMemoryDevice* mem;
  std::unique_ptr<AsyncWriteDevice> dev;
  explicit Fixture(int threads = 2) {
    auto m = std::make_unique<GatedMemoryDevice>(1 << 20);
    mem = m.get();
    dev = std::make_unique<AsyncWriteDevice>(std::move(m), threads);
  }
};

// A future that is not ready after a while did not complete while the test
// held what it waits for: the check cannot pass by timing luck, only fail
// to catch a bug on a slow machine.
template <typename T>
bool still_waiting(std::future<T>& f) {
  return f.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout;
}

}  // namespace

TEST(AsyncWriteDevice, ReadOfAWriteInFlightWaitsAndSeesIt) {
  Fixture fx;
  std::string data(8192, 'n');
  fx.mem->set_open(false);
  std::promise<int> done;
  auto done_f = done.get_future();
  fx.dev->write_many_async({{4096, data.data(), data.size()}}, [&](int r) { done.set_value(r); });
  fx.mem->await_writers(1);
  EXPECT_EQ(fx.dev->in_flight(), 1u);
  // Overlapping the write's last block only.
  auto reader = std::async(std::launch::async, [&] {
    std::string got(4096, '\0');
    EXPECT_EQ(fx.dev->read(8192, got.data(), got.size()), 0);
    return got;
  });
  EXPECT_TRUE(still_waiting(reader));
  EXPECT_TRUE(still_waiting(done_f));
  fx.mem->set_open(true);
  EXPECT_EQ(done_f.get(), 0);
  EXPECT_EQ(reader.get(), std::string(4096, 'n'));
  fx.dev->drain();
  EXPECT_EQ(fx.dev->in_flight(), 0u);
}

TEST(AsyncWriteDevice, ReadBesideAWriteInFlightDoesNotWait) {
  Fixture fx;
  std::string data(4096, 'n');
  fx.mem->set_open(false);
  std::promise<int> done;
  fx.dev->write_many_async({{65536, data.data(), data.size()}}, [&](int r) { done.set_value(r); });
  fx.mem->await_writers(1);
  std::string before(4096, 'x'), after(4096, 'x');
  // The blocks just before and just after the write's.
  EXPECT_EQ(fx.dev->read(61440, before.data(), before.size()), 0);
  EXPECT_EQ(fx.dev->read(69632, after.data(), after.size()), 0);
  EXPECT_EQ(before, std::string(4096, '\0'));
  EXPECT_EQ(after, std::string(4096, '\0'));
  fx.mem->set_open(true);
  EXPECT_EQ(done.get_future().get(), 0);
}

TEST(AsyncWriteDevice, OverlappingWritesLandInTheOrderStarted) {
  Fixture fx(4);
  std::string first(8192, '1'), second(4096, '2');
  fx.mem->set_open(false);
  std::atomic<int> done{0};
  fx.dev->write_many_async({{0, first.data(), first.size()}}, [&](int) { ++done; });
  fx.mem->await_writers(1);
  // Started from another thread: it waits for the first (which the gate
  // holds) before it is even queued.
  auto starter = std::async(std::launch::async, [&] {
    fx.dev->write_many_async({{4096, second.data(), second.size()}}, [&](int) { ++done; });
  });
  EXPECT_TRUE(still_waiting(starter));
  fx.mem->set_open(true);
  starter.get();
  fx.dev->drain();
  EXPECT_EQ(done.load(), 2);
  std::string got(8192, '\0');
  ASSERT_EQ(fx.dev->read(0, got.data(), got.size()), 0);
  EXPECT_EQ(got, std::string(4096, '1') + std::string(4096, '2'));
}

TEST(AsyncWriteDevice, AWaitedWriteOverAWriteInFlightLandsAfterIt) {
  Fixture fx;
  std::string first(4096, '1'), second(4096, '2');
  fx.mem->set_open(false);
  fx.dev->write_many_async({{0, first.data(), first.size()}}, [](int) {});
  fx.mem->await_writers(1);
  fx.mem->set_open(true);
  ASSERT_EQ(fx.dev->write(0, second.data(), second.size()), 0);
  fx.dev->drain();
  std::string got(4096, '\0');
  ASSERT_EQ(fx.dev->read(0, got.data(), got.size()), 0);
  EXPECT_EQ(got, second);
}

TEST(AsyncWriteDevice, AFailedWriteReportsItsError) {
  Fixture fx;
  std::string data(4096, 'n');
  fx.mem->set_fail(true);
  std::promise<int> done;
  fx.dev->write_many_async({{0, data.data(), data.size()}, {8192, data.data(), data.size()}},
                           [&](int r) { done.set_value(r); });
  EXPECT_EQ(done.get_future().get(), -EIO);
  fx.dev->drain();
  EXPECT_EQ(fx.dev->in_flight(), 0u);
}

TEST(AsyncWriteDevice, DestructionWaitsForEveryWrite) {
  std::atomic<int> done{0};
  std::string data(4096, 'n');
  {
    Fixture fx(2);
    fx.mem->set_open(false);
    for (int i = 0; i < 16; ++i)
      fx.dev->write_many_async({{static_cast<uint64_t>(i) * 4096, data.data(), data.size()}},
                               [&](int r) { done += r == 0; });
    fx.mem->await_writers(2);
    EXPECT_EQ(done.load(), 0);
    fx.mem->set_open(true);
  }
  EXPECT_EQ(done.load(), 16);
}

TEST(AsyncWriteDevice, EmptyBatchIsDoneAtOnce) {
  Fixture fx;
  int got = 1;
  fx.dev->write_many_async({}, [&](int r) { got = r; });
  EXPECT_EQ(got, 0);
}
