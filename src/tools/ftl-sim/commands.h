// ftl-sim subcommands other than the default `run`.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>

namespace hybridstore::ftl::sim {

// Each adds its subcommand to `app` and returns the function that runs it.
std::function<int()> setup_table2(CLI::App* app);
std::function<int()> setup_attach(CLI::App* app);

// Writes `text` to `path` ("-" = stdout). False on failure (message printed).
bool write_json_output(const std::string& path, const std::string& text);

}  // namespace hybridstore::ftl::sim
