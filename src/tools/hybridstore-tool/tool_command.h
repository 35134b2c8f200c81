// hybridstore-tool subcommands register themselves here, one concern per file.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "hscommon/config.h"

namespace hybridstore::tool {

// Options every subcommand shares: the store path and configuration.
struct GlobalArgs {
  std::string path;                 // --path DIR
  std::string conf;                 // --conf FILE
  std::vector<std::string> sets;    // --set key=value (repeatable)
  std::string log_level;            // --log-level
  // Builds the Config from --conf and --set; prints the error and returns false.
  bool load_config(Config* cfg) const;
  // Fails with a message when --path is missing.
  bool require_path() const;
};

struct ToolCommand {
  using Setup = std::function<std::function<int()>(CLI::App* sub, GlobalArgs* args)>;
  ToolCommand(std::string name, std::string description, Setup setup);
};

struct RegisteredTool {
  std::string name;
  std::string description;
  ToolCommand::Setup setup;
};
std::vector<RegisteredTool>& tool_registry();

}  // namespace hybridstore::tool
