// The product's hybridstore_* options: one table per component, and the
// list the registry is built from (product_option_tables, declared in
// hscommon/config.h). They live here, not in hscommon, so the ground floor
// holds the registry's machinery without naming the components above it.
// Test-only options are not here: src/testing/ registers its own tables.
#pragma once
#include <vector>

#include "hscommon/config.h"

namespace hybridstore {

void add_core_options(std::vector<OptionSpec>* out);     // devices, allocation, placement, RocksDB, caches
void add_section_options(std::vector<OptionSpec>* out);  // the SSD tier's HFM sections
void add_ftl_options(std::vector<OptionSpec>* out);      // raw NAND behind the embedded FTL
void add_tiering_options(std::vector<OptionSpec>* out);  // heat, planner, migrator, hotness groups
void add_kvfs_options(std::vector<OptionSpec>* out);     // RocksDB and the journal on the fastest tier

}  // namespace hybridstore
