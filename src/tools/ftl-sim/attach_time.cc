// `ftl-sim attach`: how long attach takes after a clean and after an unclean
// shutdown, on a flash file (1 GiB by default) that has been filled and then
// updated at random so that log areas are partly used.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ftl/flash_translation_layer.h"
#include "sim_options.h"

namespace hybridstore::ftl::sim {

namespace {

struct AttachArgs {
  CommonArgs common;
  std::string file;
  bool keep = false;
  int64_t updates = -1;
  std::string json;
};

// Drops the flash file from the page cache, so attach reads it from disk as
// a real chip would be read.
void drop_cache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

nlohmann::json report_json(const char* kind, const AttachReport& r) {
  return {{"shutdown", kind},
          {"wall_ms", r.wall_ms},
          {"flash_ms", double(r.flash_ns) / 1e6},
          {"scan_flash_ms", double(r.scan_flash_ns) / 1e6},
          {"page_reads", r.page_reads},
          {"tag_reads", r.tag_reads},
          {"torn_pebs", r.scan.torn},
          {"incomplete_merges", r.scan.incomplete},
          {"pebs_erased", r.erased},
          {"pebs_relocated", r.relocated}};
}

}  // namespace

std::function<int()> setup_attach(CLI::App* app) {
  auto args = std::make_shared<AttachArgs>();
  args->common.size = "1G";
  CLI::App* sub = app->add_subcommand(
      "attach", "attach time after a clean and after an unclean shutdown (scan of every PEB)");
  add_common_options(sub, &args->common);
  sub->add_option("--file", args->file, "flash file to create (default: in $TMPDIR or /tmp)");
  sub->add_flag("--keep", args->keep, "keep the flash file");
  sub->add_option("--updates", args->updates,
                  "random page updates after the fill (-1 = half a log area per LEB)")
      ->capture_default_str();
  sub->add_option("--json", args->json, "also write the results as JSON to FILE (- = stdout)");
  return [args]() -> int {
    std::string err;
    FtlOptions fo;
    if (to_ftl_options(args->common, &fo, &err) < 0) {
      fprintf(stderr, "ftl-sim: %s\n", err.c_str());
      return 2;
    }
    std::string path = args->file;
    if (path.empty()) {
      const char* t = getenv("TMPDIR");
      path = fmt::format("{}/ftl-sim-attach.{}.nand", t && *t ? t : "/tmp", getpid());
    }
    unlink(path.c_str());
    std::shared_ptr<NandMedia> media;
    if (NandMedia::create_file(path, fo.geometry, &media, &err) < 0) {
      fprintf(stderr, "ftl-sim: %s\n", err.c_str());
      return 1;
    }
    auto cleanup = [&]() {
      if (!args->keep) unlink(path.c_str());
    };
    auto fail = [&](const std::string& what, int r) {
      fprintf(stderr, "ftl-sim attach: %s: %s (%d)\n", what.c_str(), err.c_str(), r);
      cleanup();
      return 1;
    };
    std::unique_ptr<Ftl> ftl;
    if (int r = Ftl::format(media, fo, &ftl, &err); r < 0) return fail("format", r);
    fprintf(stderr, "ftl-sim attach: %s, policy %s, %u LEBs: filling\n",
            describe(fo.geometry).c_str(), policy_name(fo.policy), ftl->leb_count());
    std::mt19937_64 rng(args->common.seed);
    std::string data(ftl->leb_bytes(), '\0');
    for (char& c : data) c = static_cast<char>(rng());
    for (uint32_t l = 0; l < ftl->leb_count(); ++l)
      if (int r = ftl->write_leb(l, data.data()); r < 0) return fail("fill", r);
    const ImageParams& im = ftl->image();
    uint64_t updates = args->updates >= 0
                           ? uint64_t(args->updates)
                           : uint64_t(im.leb_count) * std::max<uint32_t>(1, im.log_pages / 2);
    if (im.policy == PolicyKind::kPubi && args->updates < 0)
      updates = uint64_t(im.leb_count / im.partition_data) * im.partition_log * im.data_pages / 2;
    fprintf(stderr, "ftl-sim attach: %llu random page updates\n", (unsigned long long)updates);
    auto update = [&](uint64_t n) -> int {
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t s = rng() % ftl->sector_count();
        if (int r = ftl->write_sectors(s, 1, data.data()); r < 0) return r;
      }
      return 0;
    };
    if (int r = update(updates); r < 0) return fail("updates", r);
    if (int r = ftl->close(); r < 0) return fail("clean shutdown", r);
    ftl.reset();
    media.reset();
    drop_cache(path);

    AttachReport clean, unclean;
    if (NandMedia::open_file(path, &media, &err) < 0) return fail("reopen", -EIO);
    if (int r = Ftl::attach(media, fo, &ftl, &err, &clean); r < 0) return fail("attach", r);
    // Unclean: more updates, and the power goes at a random program or erase.
    uint64_t cut = 1 + rng() % 20000;
    ftl->nand()->arm_power_cut(cut);
    int r = update(1000000);
    if (r != -EIO || !ftl->dead()) return fail("power cut did not happen", r);
    ftl.reset();
    media.reset();
    drop_cache(path);
    if (NandMedia::open_file(path, &media, &err) < 0) return fail("reopen", -EIO);
    if (int r2 = Ftl::attach(media, fo, &ftl, &err, &unclean); r2 < 0)
      return fail("attach after power cut", r2);
    ftl->close();
    ftl.reset();
    media.reset();

    fmt::print("attach of {} ({} PEBs), policy {}, timing {}; page cache dropped before each "
               "attach\n",
               describe(fo.geometry), fo.geometry.block_count, policy_name(fo.policy),
               args->common.timing);
    fmt::print("{:<10}{:>10}{:>13}{:>13}{:>12}{:>12}{:>7}{:>12}{:>8}{:>11}\n", "shutdown",
               "wall ms", "flash ms", "scan ms", "page reads", "tag reads", "torn", "incomplete",
               "erased", "relocated");
    for (auto [name, rep] : {std::pair<const char*, AttachReport*>{"clean", &clean},
                             {"unclean", &unclean}})
      fmt::print("{:<10}{:>10.1f}{:>13.1f}{:>13.1f}{:>12}{:>12}{:>7}{:>12}{:>8}{:>11}\n", name,
                 rep->wall_ms, double(rep->flash_ns) / 1e6, double(rep->scan_flash_ns) / 1e6,
                 rep->page_reads, rep->tag_reads, rep->scan.torn, rep->scan.incomplete,
                 rep->erased, rep->relocated);
    fmt::print("(power cut at the {}th program/erase after the clean attach)\n", cut);
    if (!args->json.empty()) {
      nlohmann::json j = nlohmann::json::array();
      j.push_back(report_json("clean", clean));
      j.push_back(report_json("unclean", unclean));
      if (!write_json_output(args->json, j.dump(2))) return 1;
    }
    cleanup();
    return 0;
  };
}

}  // namespace hybridstore::ftl::sim
