// Options of the section component; each entry documents itself in the registry.
#include "hybridstore/common/config.h"

namespace hybridstore {

void add_section_options(std::vector<OptionSpec>* v) {
  using T = OptionType;
  (void)T::kBool;
  (void)v;
}

}  // namespace hybridstore
