#include "hsoptions/option_tables.h"

namespace hybridstore {

// A function-local static: Ceph builds its option table during static
// initialisation (ceph/ceph_options.cc), possibly before this file's globals.
const std::vector<OptionTable>& product_option_tables() {
  static const std::vector<OptionTable> tables = {add_core_options, add_section_options,
                                                  add_ftl_options, add_tiering_options, add_kvfs_options};
  return tables;
}

}  // namespace hybridstore
