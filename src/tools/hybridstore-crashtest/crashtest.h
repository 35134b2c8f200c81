// hybridstore-crashtest: the crash-consistency harness (qa/short/crash.sh,
// `make crash-long`). Subcommands:
//   run   the workload process: mounts a store, queues random transactions
//         from a seed and logs each one queued (S n) and each one durable
//         (A n) to a log file, until it is killed or loses power;
//   loop  the driver: runs `run`, kills it with SIGKILL at a random moment
//         (or lets it lose power through fault injection), then mounts the
//         store, runs a deep fsck and checks the store holds exactly the
//         transactions 1..p for some p between the last durable and the last
//         queued one; repeats for N rounds with a fresh seed each round;
//   digest  prints a digest of everything observable in a store (qa scripts
//         use it to show that a refused command changed nothing).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hscommon/config.h"

namespace hybridstore::crashtest {

// The store configuration both processes use: small devices, and a low HDD
// threshold so that both tiers hold data.
Config harness_config(const std::vector<std::string>& overrides, std::string* error, bool* ok);

struct RunArgs {
  std::string path;
  std::string log;
  uint64_t seed = 1;
  int max_inflight = 16;
  uint64_t max_txns = UINT64_MAX;
  uint64_t powercut_after = 0;  // fault injection clock value, 0 = none
  bool tear = false;
  std::vector<std::string> sets;
};
int run_workload_process(const RunArgs& a);

struct LoopArgs {
  std::string dir;
  int rounds = 20;
  uint64_t seed = 0;  // base seed; 0: draw one from the clock (and print it)
  int max_kill_ms = 1500;
  std::string mode = "kill";  // kill | powercut | mixed
  int max_inflight = 16;
  bool keep = false;
  std::vector<std::string> sets;
};
int run_loop(const LoopArgs& a);

// `digest`: mounts the store and prints "objects N bytes B digest X".
int print_digest(const std::string& path, const std::vector<std::string>& sets);

}  // namespace hybridstore::crashtest
