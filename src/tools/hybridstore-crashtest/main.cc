// hybridstore-crashtest: crash-consistency harness (see crashtest.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "crashtest.h"
#include "testing/test_storage_hooks.h"

int main(int argc, char** argv) {
  using namespace hybridstore::crashtest;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  // Power cuts are fault injection (hybridstore_debug_*).
  hybridstore::install_test_storage_hooks();
  CLI::App app{"hybridstore-crashtest: kill a store mid-workload, recover it, check nothing acknowledged is lost "
               "and nothing is half-applied"};
  app.require_subcommand(1);

  RunArgs ra;
  CLI::App* run = app.add_subcommand("run", "the workload process: random transactions from a seed, each queued "
                                            "one and each durable one logged");
  run->add_option("--path", ra.path, "store directory (made by mkfs beforehand)")->required();
  run->add_option("--log", ra.log, "log file: 'B digest seed' then 'S n' (queued) and 'A n' (durable) lines")
      ->required();
  run->add_option("--seed", ra.seed, "workload seed");
  run->add_option("--max-inflight", ra.max_inflight, "transactions queued but not yet durable, at most")
      ->check(CLI::Range(1, 4096));
  run->add_option("--max-txns", ra.max_txns, "stop (and unmount) after this many transactions");
  run->add_option("--powercut-after", ra.powercut_after,
                  "lose power during this write (fault injection clock; 0 = never)");
  run->add_flag("--tear", ra.tear, "the write during which the power fails lands partly");
  run->add_option("--set", ra.sets, "override a store option: key=value (repeatable)");

  LoopArgs la;
  CLI::App* loop = app.add_subcommand("loop", "the driver: kill/recover/verify rounds, then a summary");
  loop->add_option("--dir", la.dir, "work directory (the store and round logs go there)")->required();
  loop->add_option("--rounds", la.rounds, "kill/recover rounds")->check(CLI::Range(1, 1000000));
  // Explicit, so that no run depends on the clock by accident: CI passes a
  // fixed seed, long soaks pass "random" (the seed drawn is printed).
  std::string loop_seed;
  loop->add_option("--seed", loop_seed, "base seed: a number, or 'random' to draw one from the clock (printed "
                                        "either way; rerun with it to reproduce)")
      ->required()
      ->check([](const std::string& s) {
        if (s == "random") return std::string();
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19 ||
            std::stoull(s) == 0)
          return std::string("a positive number or 'random'");
        return std::string();
      });
  loop->add_option("--max-kill-ms", la.max_kill_ms, "latest kill, in ms after the workload starts")
      ->check(CLI::Range(10, 600000));
  loop->add_option("--mode", la.mode, "kill: SIGKILL; powercut: injected power loss; mixed: either")
      ->check(CLI::IsMember({"kill", "powercut", "mixed"}));
  loop->add_option("--max-inflight", la.max_inflight, "passed to the workload")->check(CLI::Range(1, 4096));
  loop->add_flag("--keep", la.keep, "keep the store when all rounds pass (it is always kept on failure)");
  loop->add_option("--set", la.sets, "override a store option: key=value (repeatable)");

  std::string dpath;
  std::vector<std::string> dsets;
  CLI::App* digest = app.add_subcommand(
      "digest", "print a digest of everything a client can observe in a store (collections, objects, bytes, "
                "xattrs, omap), to show that something changed nothing");
  digest->add_option("--path", dpath, "store directory")->required();
  digest->add_option("--set", dsets, "override a store option: key=value (repeatable)");

  CLI11_PARSE(app, argc, argv);
  if (digest->parsed()) return print_digest(dpath, dsets);
  if (run->parsed()) return run_workload_process(ra);
  if (loop->parsed()) {
    la.seed = loop_seed == "random" ? 0 : std::stoull(loop_seed);
    return run_loop(la);
  }
  return 2;
}
