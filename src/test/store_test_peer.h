// The one door from the tests into the store's internals (the deferred
// writer, a tier's device, the onode cache): a friend of HybridStore, so the
// product's public API has none. Only white-box tests include it, together
// with store/store_impl.h.
#pragma once
#include "hybridstore/store/hybrid_store.h"

namespace hybridstore::test {

class StoreTestPeer {
 public:
  static StoreImpl* impl(HybridStore& store) { return store.impl_.get(); }
};

}  // namespace hybridstore::test
