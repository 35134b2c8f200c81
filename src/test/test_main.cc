// gtest entry point shared by every unit-test binary.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "hscommon/log.h"
#include "testing/test_storage_hooks.h"

extern char** environ;

namespace {

// ctest kills a test that runs past its TIMEOUT and shows nothing of where it
// was stuck. With --hs-stacks-after=N (ctest passes it, a little below the
// timeout) or HS_TEST_STACKS_AFTER=N the binary prints the stacks of all its
// threads after N seconds, through gdb, and aborts: a hang fails with its
// evidence.
void start_stack_watchdog(double secs) {
  if (secs <= 0) return;
  std::thread([secs] {
    std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    fprintf(stderr, "\n*** still running after %.0f s (in %s.%s); the stacks of every thread follow\n", secs,
            test ? test->test_suite_name() : "?", test ? test->name() : "?");
    // Yama's ptrace_scope=1 lets only ancestors attach, unless we allow it.
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    std::string pid = std::to_string(getpid());
    const char* args[] = {"gdb", "-batch", "-nx", "-p", pid.c_str(), "-ex", "set pagination off",
                          "-ex", "thread apply all bt", nullptr};
    pid_t child;
    if (posix_spawnp(&child, "gdb", nullptr, nullptr, const_cast<char* const*>(args), environ) == 0) {
      int status;
      waitpid(child, &status, 0);
    } else {
      fprintf(stderr, "*** gdb not found (make deps installs it): no stacks\n");
    }
    std::abort();
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Tests drive fault injection and device models through store options.
  hybridstore::install_test_storage_hooks();
  double stacks_after = 0;
  if (const char* e = getenv("HS_TEST_STACKS_AFTER")) stacks_after = atof(e);
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind("--hs-stacks-after=", 0) == 0) stacks_after = atof(argv[i] + 18);
  start_stack_watchdog(stacks_after);
  // --hs-set=key=value (repeatable) runs the suite under other store options:
  // gathered into HS_TEST_SET for small_store_config() (store_helpers.cc).
  std::string sets;
  bool kv_location_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--hs-set=", 0) != 0) continue;
    sets += (sets.empty() ? "" : " ") + a.substr(9);
    if (a.rfind("--hs-set=hybridstore_kv_location=", 0) == 0) kv_location_given = true;
  }
  if (const char* e = getenv("HS_TEST_SET"); sets.empty() && e) {
    sets = e;  // set by hand, without --hs-set: as given
    kv_location_given = sets.find("hybridstore_kv_location=") != std::string::npos;
  }
  // The product's default is hybridstore_kv_location=device (RocksDB and the
  // journal in the kvfs on the SSD tier). The plain runs pin directory, the
  // format-3 layout, unless an --hs-set names the option: a device store's
  // mkfs lends and formats the kvfs, which would slow the whole suite on
  // CI's 2 cores, and many tests reach into <store>/db or <store>/journal
  // (fault injection into RocksDB's syncs, corrupt journals, table footers).
  // The .kvdev and .nandkv ctest variants (src/test/CMakeLists.txt) pass
  // device, and tests of device stores (kv_on_device_test, ...) set it
  // themselves. First, so that a later k=v of the same run wins.
  if (!kv_location_given) sets = "hybridstore_kv_location=directory" + (sets.empty() ? "" : " " + sets);
  setenv("HS_TEST_SET", sets.c_str(), 1);
  // Quiet by default; HS_TEST_LOG=warn|info|debug when chasing a failure.
  hybridstore::LogLevel level = hybridstore::LogLevel::kError;
  if (const char* l = std::getenv("HS_TEST_LOG")) hybridstore::parse_log_level(l, &level);
  hybridstore::set_log_level(level);
  return RUN_ALL_TESTS();
}
