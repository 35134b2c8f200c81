// Opening the store named by --path for a subcommand, with its errors
// printed the same way everywhere.
#pragma once
#include <memory>
#include <string>

#include "hybridstore/store/hybrid_store.h"
#include "tool_command.h"

namespace hybridstore::tool {

// Mounts the store; prints the reason and returns null on failure.
std::unique_ptr<HybridStore> mount_store(const GlobalArgs& args);
// Prints "hybridstore-tool: <what>: <strerror>" and returns 1.
int fail(const std::string& what, int err);
int fail(const std::string& what);

}  // namespace hybridstore::tool
