#include "ftl/nand_timing.h"

namespace hybridstore::ftl {

bool NandTiming::from_preset(const std::string& name, NandTiming* out) {
  if (name == "none") {
    *out = none();
    return true;
  }
  if (name == "paper") {
    *out = paper();
    return true;
  }
  return false;
}

}  // namespace hybridstore::ftl
