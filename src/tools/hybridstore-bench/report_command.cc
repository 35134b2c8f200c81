// report: plots runs recorded with --json into one report (PNGs and
// index.html), e.g. a write and the seq and rand runs that read it back.
#include <cstdio>
#include <filesystem>

#include "bench_command.h"
#include "bench_output.h"

namespace hybridstore::bench {
namespace {

BenchCommand report_cmd("report", "plot runs recorded with --json FILE into DIR (PNGs and index.html)",
                        [](CLI::App* sub) {
                          auto out = std::make_shared<std::string>();
                          auto files = std::make_shared<std::vector<std::string>>();
                          sub->add_option("--out", *out, "report directory")->required();
                          sub->add_option("files", *files, "JSON files written by --json")
                              ->required()
                              ->check(CLI::ExistingFile);
                          return [out, files]() -> int {
                            std::string why;
                            if (!report_tools_available(&why)) {
                              fprintf(stderr, "hybridstore-bench report: %s\n", why.c_str());
                              return 2;
                            }
                            std::error_code ec;
                            std::filesystem::create_directories(*out, ec);
                            if (ec || !std::filesystem::is_directory(*out)) {
                              fprintf(stderr, "hybridstore-bench report: cannot make %s\n", out->c_str());
                              return 2;
                            }
                            if (make_report(*out, *files) != 0) return 1;
                            printf("report: %s/index.html\n", out->c_str());
                            return 0;
                          };
                        });

}  // namespace
}  // namespace hybridstore::bench
