// SFS hotness grouping: which group (hot ... cold) a piece of data joins when
// it is written, so that one erase unit only ever holds data of one group.
//
// Group centres come from an iterative, k-means-like refinement over hotness
// samples (SFS: equi-width and equi-height splits cut natural groups apart, so
// the mean hotness of each group is its centre; at most 3 iterations, or until
// the centres stop moving). We cluster log10(hotness): hotness spans orders of
// magnitude and a linear mean would be dominated by the hottest samples. The
// centres persist (encode/decode) so a mount starts from the last ones.
// Group 0 is the hottest.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hybridstore {

class HotnessGrouping {
 public:
  static constexpr int kMaxIterations = 3;

  explicit HotnessGrouping(uint32_t groups = 4);

  uint32_t groups() const { return groups_; }
  bool seeded() const { return !centres_.empty(); }
  // Nearest centre; group 0 until the first refine().
  uint32_t group_of(double hotness) const;
  // Refines the centres from hotness samples (writes per second; <= 0 counts
  // as the coldest possible). The first call seeds the centres at equal
  // widths over the samples' (log) range.
  // Returns the iterations run.
  int refine(const std::vector<double>& samples);
  // log10 hotness of each centre, hottest first.
  const std::vector<double>& centres() const { return centres_; }

  std::string encode() const;
  // 0, or -EIO with *error on a damaged or foreign record.
  static int decode(std::string_view record, HotnessGrouping* out, std::string* error);

 private:
  uint32_t groups_;
  std::vector<double> centres_;  // descending
  std::vector<double> bounds_;   // midpoints between neighbouring centres
};

}  // namespace hybridstore
