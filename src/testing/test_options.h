// The option tables of the testing library (test_options.cc).
#pragma once
#include <vector>

#include "hscommon/config.h"

namespace hybridstore {

void add_fault_injection_options(std::vector<OptionSpec>* out);  // hybridstore_debug_*
void add_device_model_options(std::vector<OptionSpec>* out);     // hybridstore_device_model, hybridstore_model_*

// Registers both as test-only (idempotent); install_test_storage_hooks
// calls it.
void register_test_options();

}  // namespace hybridstore
