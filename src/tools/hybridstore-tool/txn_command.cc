// txn FILE: apply transactions written as JSON (see docs/txn-json.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hybridstore/txn_json/txn_json.h"
#include "store_access.h"

namespace hybridstore::tool {
namespace {

ToolCommand txn_cmd("txn", "apply transactions from a JSON file ('-' reads stdin); each is atomic",
                    [](CLI::App* sub, GlobalArgs* args) {
                      auto file = std::make_shared<std::string>();
                      auto quiet = std::make_shared<bool>(false);
                      sub->add_option("file", *file, "JSON file: a list of {\"ops\": [...]}")->required();
                      sub->add_flag("-q,--quiet", *quiet, "print nothing on success");
                      return [args, file, quiet] {
                        std::string text;
                        std::string base;
                        if (*file == "-") {
                          std::ostringstream ss;
                          ss << std::cin.rdbuf();
                          text = ss.str();
                        } else {
                          std::ifstream f(*file, std::ios::binary);
                          if (!f) return fail("cannot read " + *file);
                          std::ostringstream ss;
                          ss << f.rdbuf();
                          text = ss.str();
                          base = std::filesystem::path(*file).parent_path().string();
                        }
                        std::vector<Transaction> txns;
                        std::string err;
                        // Parse everything before touching the store: a bad
                        // file changes nothing.
                        if (parse_json_transactions(text, base, &txns, &err) < 0) return fail(*file + ": " + err);
                        auto store = mount_store(*args);
                        if (!store) return 1;
                        size_t n = 0;
                        for (auto& t : txns) {
                          TxnError e;
                          int r = store->apply_transaction(std::move(t), &e);
                          if (r < 0 && e.op_index < 0) {
                            fprintf(stderr, "hybridstore-tool: transaction %zu failed: %s\n", n, e.message.c_str());
                          } else if (r < 0) {
                            fprintf(stderr, "hybridstore-tool: transaction %zu failed at op %d (%s): %s\n", n,
                                    e.op_index, e.op.c_str(), e.message.c_str());
                          }
                          if (r < 0) {
                            if (n) fprintf(stderr, "hybridstore-tool: the %zu transactions before it were applied\n", n);
                            store->umount();
                            return 1;
                          }
                          ++n;
                        }
                        if (int r = store->umount(); r < 0) return fail("umount", r);
                        if (!*quiet) printf("applied %zu transactions\n", n);
                        return 0;
                      };
                    });

}  // namespace
}  // namespace hybridstore::tool
