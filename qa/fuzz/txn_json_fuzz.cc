// libFuzzer target: the JSON transaction parser (txn_json.h) and the object
// id parser tools use for --oid, fed untrusted text. Input: one mode byte,
// then the text (mode even: a transaction list; odd: an object id).
// Properties: never a crash, an uncaught exception, an out-of-bounds read or
// undefined behaviour; a rejection says why and leaves no transactions; an
// accepted object id survives object_id_to_json and back unchanged.
#include <cstdint>

#include "fuzz_common.h"
#include "hybridstore/txn_json/txn_json.h"

using namespace hybridstore;
using namespace hybridstore::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(as_view(data + 1, size - 1));
  std::string err;
  if (data[0] % 2 == 0) {
    std::vector<Transaction> txns;
    // data_file paths resolve against a directory that does not exist.
    if (parse_json_transactions(text, "/nonexistent-fuzz-dir", &txns, &err) < 0) {
      require(!err.empty(), "a rejected transaction file must say why");
      require(txns.empty(), "a rejected transaction file must yield nothing");
    }
    return 0;
  }
  const CollectionId coll("3.1f_head");
  ObjectId o;
  if (parse_object_id_arg(text, coll, &o, &err) < 0) {
    require(!err.empty(), "a rejected object id must say why");
    return 0;
  }
  ObjectId back;
  require(parse_object_id(object_id_to_json(o), coll, &back, &err) == 0, "an object id's JSON must parse");
  require(back == o && back.hash == o.hash, "object id JSON round trip changed it");
  return 0;
}
