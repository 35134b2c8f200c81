// hybridstore-bench subcommands register themselves here, one file each, so a
// new benchmark is a new file: define a static BenchCommand in it.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace hybridstore::bench {

struct BenchCommand {
  // `setup` adds the subcommand's options to `sub`; the returned function runs it
  // after parsing and gives the exit code.
  using Setup = std::function<std::function<int()>(CLI::App* sub)>;
  BenchCommand(std::string name, std::string description, Setup setup);
};

struct RegisteredBench {
  std::string name;
  std::string description;
  BenchCommand::Setup setup;
};
std::vector<RegisteredBench>& bench_registry();

}  // namespace hybridstore::bench
