// hybridstore-tool: create, inspect, check and drive a HybridStore offline.
#include <cstdio>
#include <map>

#include "hscommon/log.h"
#include "testing/test_storage_hooks.h"
#include "tool_command.h"

namespace hybridstore::tool {

std::vector<RegisteredTool>& tool_registry() {
  static std::vector<RegisteredTool> r;
  return r;
}

ToolCommand::ToolCommand(std::string name, std::string description, Setup setup) {
  tool_registry().push_back({std::move(name), std::move(description), std::move(setup)});
}

bool GlobalArgs::load_config(Config* cfg) const {
  std::string err;
  // Reads through the tool inspect the store; they are not client load and
  // must not promote objects (three reads of an HDD object would move it,
  // and an inspection would change what the devices hold). The config file
  // or --set may still turn promotion on.
  cfg->set("hybridstore_tier_promote_hits", "0", &err);
  if (!conf.empty() && cfg->load_ini(conf, &err) < 0) {
    fprintf(stderr, "hybridstore-tool: %s\n", err.c_str());
    return false;
  }
  for (const auto& s : sets) {
    if (cfg->set_from_arg(s, &err) < 0) {
      fprintf(stderr, "hybridstore-tool: --set %s: %s\n", s.c_str(), err.c_str());
      return false;
    }
  }
  LogLevel lvl;
  std::string want = log_level.empty() ? cfg->get_str("hybridstore_log_level") : log_level;
  if (!parse_log_level(want, &lvl)) {
    fprintf(stderr, "hybridstore-tool: bad log level '%s'\n", want.c_str());
    return false;
  }
  set_log_level(lvl);
  if (!cfg->get_str("hybridstore_log_file").empty())
    set_log_file(cfg->get_str("hybridstore_log_file"));
  return true;
}

bool GlobalArgs::require_path() const {
  if (path.empty()) {
    fprintf(stderr, "hybridstore-tool: --path DIR is required\n");
    return false;
  }
  return true;
}

}  // namespace hybridstore::tool

int main(int argc, char** argv) {
  using namespace hybridstore::tool;
  // --set accepts the debug options (fault injection, device models) that
  // qa scripts drive the store with.
  hybridstore::install_test_storage_hooks();
  CLI::App app{"hybridstore-tool: create, inspect, check and drive a HybridStore"};
  app.require_subcommand(1);
  GlobalArgs args;
  app.add_option("--path", args.path, "store directory");
  app.add_option("--conf", args.conf, "INI config file ([hybridstore] section)");
  app.add_option("--set", args.sets, "override an option: key=value (repeatable)");
  app.add_option("--log-level", args.log_level, "error|warn|info|debug");
  std::map<CLI::App*, std::function<int()>> runners;
  for (auto& t : tool_registry()) {
    CLI::App* sub = app.add_subcommand(t.name, t.description);
    // Global options may also come after the subcommand name.
    sub->fallthrough();
    runners[sub] = t.setup(sub, &args);
  }
  CLI11_PARSE(app, argc, argv);
  for (auto& [sub, run] : runners)
    if (sub->parsed()) return run();
  return 2;
}
