// hybridstore-bench: benchmarks and reproductions of the papers' figures.
// Every subcommand prints a table; most can also write JSON (--json FILE).
#include <cstdio>
#include <map>

#include "bench_command.h"
#include "bench_output.h"
#include "hscommon/log.h"
#include "testing/test_storage_hooks.h"

namespace hybridstore::bench {

std::vector<RegisteredBench>& bench_registry() {
  static std::vector<RegisteredBench> r;
  return r;
}

BenchCommand::BenchCommand(std::string name, std::string description, Setup setup) {
  bench_registry().push_back({std::move(name), std::move(description), std::move(setup)});
}

}  // namespace hybridstore::bench

int main(int argc, char** argv) {
  using namespace hybridstore::bench;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  set_command_line(argc, argv);
  // Benchmarks may run the store under a device model (hybridstore_device_model).
  hybridstore::install_test_storage_hooks();
  CLI::App app{"hybridstore-bench: HybridStore benchmarks (each subcommand prints a table)"};
  app.require_subcommand(1);
  std::map<CLI::App*, std::function<int()>> runners;
  for (auto& b : bench_registry()) {
    CLI::App* sub = app.add_subcommand(b.name, b.description);
    runners[sub] = b.setup(sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 2, as the modes' own checks do; --help exits 0.
    int r = app.exit(e);
    if (r != 0 && app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-')
      fprintf(stderr, "hybridstore-bench: unknown mode '%s' (hybridstore-bench --help lists them)\n", argv[1]);
    return r == 0 ? 0 : 2;
  }
  for (auto& [sub, run] : runners)
    if (sub->parsed()) return run();
  return 2;
}
