// HotnessGroups: SFS hotness grouping for data written to the SSD (seed: SFS).
//
// SFS writes data of similar update likelihood into the same segment (for us:
// the same flash erase block), so segments die whole and cleaning copies
// little. Hotness (docs/algorithms.md):
//   block hotness   = writes / age
//   segment hotness = mean hotness of its blocks
// Groups are ranges of hotness around centres; SFS found fixed partitions
// (equal-width or equal-count) split natural clusters, so the centres come
// from a k-means-like refinement: assign each value to the nearest centre,
// move each centre to the mean of its members, repeat at most 3 times or until
// no centre moves. Centres persist across mounts (encode/decode) and seed the
// next refinement, which then usually stops after one pass.
//
// Groups are numbered 0 (hottest) to groups-1 (coldest). With the default four
// they are named hot, warm, cold and read-only: the read-only group is the
// cluster of lowest hotness, which holds data written once and not since.
// Hotness is clustered on a log scale (SFS clusters it linearly; the
// cleaning benchmark separated hot from cold better on the log scale, see
// refine() below).
//
// Thread safety: classify() and centres() may run concurrently with each
// other and with refine()/decode() (a reader-writer lock guards the centres).
#pragma once
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace hybridstore {

class Config;

// writes / age in writes per second; an age below one second counts as one
// second, so fresh data is hot but never infinitely so.
double block_hotness(uint64_t writes, uint64_t age_us);
// Mean of the block hotness values (0 for none).
double segment_hotness(const std::vector<double>& block_hotness);
// SFS cleaning priority of a segment with live fraction u and hotness H:
// (1 - u) / (2 u H). Higher is a better victim; an empty segment (u = 0) or
// one never rewritten (H = 0) is +infinity.
double cost_hotness(double live_fraction, double hotness);

struct HotnessGroupOptions {
  unsigned groups = 4;          // 1..16
  unsigned max_iterations = 3;  // SFS stops after at most three passes
  // A pass in which every centre moves by at most this fraction of the sample's
  // hotness range counts as "centres stopped moving".
  double tolerance = 1e-3;
};

// From hybridstore_sfs_groups and hybridstore_sfs_refine_iterations.
HotnessGroupOptions hotness_group_options_from_config(const Config& conf);

class HotnessGroups {
 public:
  explicit HotnessGroups(const HotnessGroupOptions& opts = {});

  // Refines the centres over a sample of segment hotness values. Seeds from
  // the current centres when there are any (e.g. loaded at mount), otherwise
  // by farthest-point selection. The passes run on log(hotness), since
  // hotness spans orders of magnitude (SFS's k-means works on the raw values;
  // the cleaning benchmark showed the log scale separates hot from cold
  // better: write amplification 1.68 against 2.09 on the same run). Returns
  // the number of passes made (0 for an empty sample, else 1..max_iterations).
  unsigned refine(const std::vector<double>& hotness);

  // Group of the nearest centre on the log scale (0 = hottest). Before any
  // centres exist every value is group 0.
  unsigned classify(double hotness) const;

  bool has_centres() const;
  std::vector<double> centres() const;  // descending, one per group
  unsigned groups() const { return opts_.groups; }
  static const char* group_name(unsigned group, unsigned groups);

  // Versioned, crc32c-checked record of the centres. decode() rejects garbage,
  // non-finite or negative centres, centres out of order, and a group count
  // different from the configured one (-EINVAL with a message; the caller then
  // starts from fresh seeds).
  std::string encode() const;
  int decode(std::string_view record, std::string* error);

 private:
  HotnessGroupOptions opts_;
  mutable std::shared_mutex mu_;
  std::vector<double> centres_;  // empty, or opts_.groups values, non-increasing
};

}  // namespace hybridstore
