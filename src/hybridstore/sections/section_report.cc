#include "hybridstore/sections/section_report.h"

#include <fmt/format.h>

#include "hscommon/config.h"

namespace hybridstore {

std::string format_section_report(const SectionAllocator& a) {
  const uint64_t bs = a.geometry().block_size;
  std::string out = fmt::format(
      "block {} B, erase unit {} blocks, {} of {} erase units free\n"
      "{:<10} {:>7} {:>6} {:>6} {:>20} {:>12} {:>12} {:>6} {:>6} {:>6} {:>12}\n",
      bs, a.erase_unit_blocks(), a.free_erase_units(), a.erase_unit_count(), "section",
      "extent", "mode", "units", "extents o/s/w", "consumed", "live", "util", "fill", "frag",
      "holes");
  SectionUsage total;
  total.name = "total";
  auto line = [&](const SectionUsage& u, const std::string& extent, const std::string& mode) {
    uint64_t handed = u.consumed_blocks - u.untaken_blocks;
    uint64_t free_in = u.open_tail_blocks + u.staged_free_blocks + u.hole_blocks;
    double util = u.consumed_blocks ? double(u.live_bytes) / double(u.consumed_blocks * bs) : 0;
    double fill = handed ? double(u.live_blocks) / double(handed) : 0;
    double frag = handed ? double(free_in) / double(handed) : 0;
    out += fmt::format("{:<10} {:>7} {:>6} {:>6} {:>20} {:>12} {:>12} {:>6.3f} {:>6.3f} {:>6.3f} {:>12}\n",
                       u.name, extent, mode, u.erase_units,
                       fmt::format("{}/{}/{}", u.extents_open, u.extents_sealed,
                                   u.extents_written),
                       format_size(u.consumed_blocks * bs), format_size(u.live_bytes), util,
                       fill, frag, format_size(u.hole_blocks * bs));
  };
  auto usage = a.usage();
  for (size_t i = 0; i < usage.size(); ++i) {
    const SectionSpec& sp = a.section(static_cast<int>(i));
    if (sp.bypass()) {
      out += fmt::format("{:<10} {:>7} {:>6}\n", sp.name, "-", "bypass");
      continue;
    }
    const SectionUsage& u = usage[i];
    line(u, format_size_exact(uint64_t(sp.extent_blocks) * bs), partition_mode_name(sp.mode));
    total.erase_units += u.erase_units;
    total.consumed_blocks += u.consumed_blocks;
    total.live_blocks += u.live_blocks;
    total.live_bytes += u.live_bytes;
    total.open_tail_blocks += u.open_tail_blocks;
    total.staged_free_blocks += u.staged_free_blocks;
    total.hole_blocks += u.hole_blocks;
    total.untaken_blocks += u.untaken_blocks;
    total.extents_open += u.extents_open;
    total.extents_sealed += u.extents_sealed;
    total.extents_written += u.extents_written;
  }
  line(total, "", "");
  return out;
}

}  // namespace hybridstore
