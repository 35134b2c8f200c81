// Transactions written as JSON, for tools, qa scripts and operators.
//
// The text is a list of transactions, each {"ops": [...]}; an op is an object
// with "op" and its arguments (see docs/txn-json.md for every op). Objects are
// named by "oid": a plain name, or an object with the identity fields
// {"name", "pool", "namespace", "key", "hash", "snap", "generation",
// "shard"}. Parsing is strict — unknown ops or fields, wrong types and
// negative sizes are errors naming the transaction, the op and the field —
// and never throws or crashes on malformed input.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/store/transaction.h"

namespace hybridstore {

// `base_dir` resolves relative "data_file" paths. Returns 0 or -EINVAL.
int parse_json_transactions(std::string_view text, const std::string& base_dir,
                            std::vector<Transaction>* out, std::string* error);

// An object named on a command line or in JSON: a name, or JSON identity.
int parse_object_id(const nlohmann::json& j, const CollectionId& coll, ObjectId* out, std::string* error);
int parse_object_id_arg(const std::string& arg, const CollectionId& coll, ObjectId* out, std::string* error);
nlohmann::json object_id_to_json(const ObjectId& o);

// base64 (RFC 4648); decode returns false on invalid input.
std::string base64_encode(std::string_view in);
bool base64_decode(std::string_view in, std::string* out);

}  // namespace hybridstore
