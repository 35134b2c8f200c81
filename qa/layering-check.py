#!/usr/bin/env python3
"""Fails when a source file includes a layer it may not call, or breaks the
house rules the same page states.

The rules are the table "Allowed includes" in docs/architecture.md: each row
names a layer (a folder under src/hybridstore/, or one of the libraries that
are folders of src/ themselves, TOP_LAYERS) and the layers its files may
include. Everything else under src/ (tools, tests, fuzz targets) may include
any layer. More rules from the same page:
  - no product layer includes src/testing/ (the test-only library);
  - store/'s parts are its own: a file outside store/ includes only the
    store's public headers (hybrid_store.h, api_types.h, transaction.h,
    storage_hooks.h), and tests under src/test/ the test hooks too
    (test_hooks.h);
  - no class with behaviour in store/ has public data members (plain
    structs of data are fine);
  - no product file compares a tier's or a device's kind or name with
    "nand", "ssd" or "hdd" outside the tier factory (space/tier_space.cc,
    and format/store_format.cc for the layouts format-1 stores imply): what
    differs between tiers is a property their spaces answer.
  - no function in src/ is longer than 120 lines unless the line right
    above its signature (or the comment block right above) gives the reason,
    starting "Long on purpose:".

Usage: qa/layering-check.py [--root DIR] [--self-test]
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

ROW = re.compile(r"^\|\s*`([a-z0-9_]+)`\s*\|\s*(.*?)\s*\|\s*$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TABLE_HEADING = "### Allowed includes"


def read_rules(doc_path):
    """{layer: set(layers it may include)} from the table under TABLE_HEADING."""
    try:
        lines = open(doc_path, encoding="utf-8").read().splitlines()
    except OSError as e:
        sys.exit(f"layering-check: cannot read {doc_path}: {e.strerror}")
    try:
        start = lines.index(TABLE_HEADING)
    except ValueError:
        sys.exit(f"layering-check: {doc_path} has no '{TABLE_HEADING}' table")
    rules = {}
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        m = ROW.match(line)
        if not m:
            continue
        allowed = set(re.findall(r"`([a-z0-9_]+)`", m.group(2)))
        rules[m.group(1)] = allowed
    if not rules:
        sys.exit(f"layering-check: the '{TABLE_HEADING}' table in {doc_path} has no rows")
    for layer, allowed in rules.items():
        unknown = allowed - set(rules)
        if unknown:
            sys.exit(f"layering-check: layer {layer} may include {sorted(unknown)}, which the table does not define")
    return rules


# Libraries that are folders of src/ themselves, not of src/hybridstore/.
TOP_LAYERS = ("ftl", "hscommon", "hsio", "hsoptions", "rocksdb_crc32c", "testing")

# What files outside store/ may include of it.
STORE_PUBLIC = {"hybrid_store.h", "api_types.h", "transaction.h", "storage_hooks.h"}
STORE_TEST_ONLY = {"test_hooks.h"}

# The tier factory: the only product files that may tell tiers apart by a
# kind or name.
TIER_FACTORY = {"src/hybridstore/space/tier_space.cc", "src/hybridstore/format/store_format.cc"}
TIER_WORDS = re.compile(r'"(nand|ssd|hdd)"')
COMPARED = re.compile(r'(==|!=)\s*"(nand|ssd|hdd)"|"(nand|ssd|hdd)"\s*(==|!=)|'
                      r'(compare|rfind|starts_with|find)\(\s*"(nand|ssd|hdd)"')
KIND_OR_NAME = re.compile(r'kind|name|tier|device|backend|role|media', re.I)


def layer_of_file(rel):
    parts = rel.split("/")
    if len(parts) >= 4 and parts[0] == "src" and parts[1] == "hybridstore":
        return parts[2]
    if len(parts) >= 3 and parts[0] == "src" and parts[1] in TOP_LAYERS:
        return parts[1]
    return None


def layer_of_include(inc):
    parts = inc.split("/")
    if len(parts) >= 3 and parts[0] == "hybridstore":
        return parts[1]
    if len(parts) >= 2 and parts[0] in TOP_LAYERS:
        return parts[0]
    return None


def strip_comments(text):
    """The text with // and /* */ comments blanked, strings kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif (j := comment_end(text, i)) is not None:
            out.append(blanked(text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def comment_end(text, i):
    """Where the // or /* */ comment that starts at i ends; None if none does."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    return None


def blanked(chunk):
    """The chunk as spaces, its line breaks kept (line numbers stay right)."""
    return "".join(ch if ch == "\n" else " " for ch in chunk)


def matching_brace(text, open_at):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


CLASS_HEAD = re.compile(r"\b(class|struct)\s+(\w+)\s*(final\s*)?(:[^;{()]*)?\{")
ACCESS = re.compile(r"^\s*(public|private|protected)\s*:")


def members(body):
    """Top-level statements of a class body: (access-independent) text pieces
    ending at ';' or at a '{...}' block, with access labels as their own."""
    pieces, start, i, n = [], 0, 0, len(body)
    while i < n:
        c = body[i]
        if c == "{":
            end = matching_brace(body, i)
            # A brace that opens a function body or a nested type ends the
            # member; one in an initializer (`x{0};`) does not.
            rest = body[end + 1:].lstrip()
            head = body[start:i]
            if rest.startswith(";") and not re.search(r"\b(class|struct|enum|union)\b", head) and ")" not in head:
                i = end + 1
                continue
            pieces.append(body[start:end + 1])
            i = end + 1
            if body[i:].lstrip().startswith(";"):
                i = body.index(";", i) + 1
            start = i
            continue
        if c == ";":
            pieces.append(body[start:i + 1])
            start = i + 1
        elif c == ":" and ACCESS.match(body[start:i + 1] + " "):
            pieces.append(body[start:i + 1])
            start = i + 1
        i += 1
    return [p.strip() for p in pieces if p.strip()]


def public_data_in_classes_with_behaviour(text):
    """[(class name, member, offset)] for each public data member of a class
    that has behaviour: a virtual function, or a member function that is not
    const, static, a constructor, a destructor or an assignment."""
    found = []
    for m in CLASS_HEAD.finditer(text):
        name = m.group(2)
        open_at = m.end() - 1
        close = matching_brace(text, open_at)
        body = text[open_at + 1:close]
        access = "public" if m.group(1) == "struct" else "private"
        behaviour, data = False, []
        for piece in members(body):
            a = ACCESS.match(piece)
            if a:
                access = a.group(1)
                continue
            flat = re.sub(r"<[^<>]*>", "", re.sub(r"<[^<>]*>", "", piece))  # template arguments
            if re.match(r"(using|typedef|friend|enum|class|struct|union|static_assert|template)\b", flat):
                continue
            call = re.search(r"(~?\b\w+|operator\s*\S+)\s*\(", flat)
            eq = flat.find("=")
            brace = flat.find("{")
            is_function = call and (eq < 0 or call.start() < eq) and (brace < 0 or call.start() < brace)
            if is_function:
                fname = call.group(1).lstrip("~")
                if fname == name or fname.startswith("operator"):
                    continue
                decl = flat.split("{")[0]
                if re.search(r"\b(virtual|override)\b", decl) or not re.search(r"\)\s*const\b", decl) and \
                        not re.match(r"(static|constexpr)\b", decl):
                    behaviour = True
                continue
            if access == "public" and not re.match(r"(static|constexpr)\b", flat):
                data.append(piece.split("\n")[0][:60])
        if behaviour:
            found.extend((name, d, m.start()) for d in data)
    return found


def tier_kind_compares(text):
    """Offsets of string compares of a kind or name with a tier's word."""
    hits = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if TIER_WORDS.search(line) and COMPARED.search(line) and KIND_OR_NAME.search(TIER_WORDS.sub("", line)):
            hits.append(lineno)
    return hits


# Functions: no function over MAX_FUNCTION_LINES lines without a reason beside
# it. lizard would do, but is not on the CI images; this scanner only has to
# find function bodies at namespace and class scope, so it matches braces in
# the code with comments, literals and preprocessor lines blanked.
MAX_FUNCTION_LINES = 120
LONG_REASON = "Long on purpose:"
ACCESS_LABEL = re.compile(r"^\s*(public|private|protected)\s*:(?!:)")
# What may follow a function's parameter list before its body.
TRAILER = re.compile(r"\)\s*(?:(?:const|volatile|noexcept|override|final|mutable|&&|&)\s*)*"
                     r"(?:->\s*[\w:<>,*&\s]+?\s*)?$")
INIT_LIST = re.compile(r"\)\s*(?:noexcept\s*)?:\s*[^;]*$", re.S)
FUNCTION_NAME = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*~?(?:operator\s*[^\s(]+|[A-Za-z_]\w*))\s*(?:<[^()]*>)?\s*\($")


def blank_code(text):
    """The text with comments, the insides of string and character literals
    and preprocessor lines blanked (newlines kept, so offsets and line
    numbers stay)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while True:  # a directive runs on over backslash-newlines
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > j and text[k - 1] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            out.append(blanked(text[i:k]))
            i = k
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if (j := comment_end(text, i)) is not None:
            out.append(blanked(text[i:j]))
            i = j
        elif c == '"' and i > 0 and text[i - 1] == "R" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_")
                                                          or text[i - 2] in "uUL8"):
            # A raw string: R"delim( ... )delim".
            open_paren = text.find("(", i)
            delim = text[i + 1:open_paren]
            close = text.find(")" + delim + '"', open_paren)
            j = n if close < 0 else close + len(delim) + 2
            out.append('"' + blanked(text[i + 1:j - 1]) + '"')
            i = j
        elif c == '"' or (c == "'" and not is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1)
            out.append(c + " " * (j - i - 1) + text[j])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """Whether the ' at i separates digits (1'000'000), not opens a char."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_."):
        j -= 1
    return j < i and text[j].isdigit()


def functions(code):
    """[(name, first line, last line)] of each function body at namespace or
    class scope in `code` (as blank_code returns it)."""
    found = []

    def walk(start, end):
        head_start, i = start, start
        while i < end:
            c = code[i]
            if c in ";}":
                head_start = i + 1
            elif c == ":" and ACCESS_LABEL.match(code[head_start:i + 1]):
                head_start = i + 1
            elif c == "{":
                close = matching_brace(code, i)
                head = code[head_start:i]
                flat = head.strip()
                if INIT_LIST.search(flat) and re.search(r"[\w>]\s*$", flat):
                    i = close + 1  # a member's brace initializer in a constructor's list
                    continue
                if TRAILER.search(flat) or INIT_LIST.search(flat) and flat.endswith(")"):
                    first = head_start + len(head) - len(head.lstrip())
                    found.append((function_name(flat), code.count("\n", 0, first) + 1,
                                  code.count("\n", 0, close) + 1))
                elif re.search(r"\b(namespace|class|struct|union)\b", flat) and not re.search(r"\benum\b", flat) \
                        or re.match(r'extern\s*"', flat):
                    walk(i + 1, close)
                i = close + 1
                head_start = i
                continue
            i += 1

    walk(0, len(code))
    return found


def function_name(head):
    """The name before the parameter list of a function's head, or '?'."""
    depth = 0
    for k in range(len(head) - 1, -1, -1):
        if head[k] == ")":
            depth += 1
        elif head[k] == "(":
            depth -= 1
            if depth == 0:
                # The outermost list; a constructor's initializers come after
                # its parameters, so keep going left to the first list at depth 0.
                m = FUNCTION_NAME.search(head[:k + 1])
                before = head[:k].rstrip()
                if m and not before.endswith(","):
                    name = re.sub(r"\s+", "", m.group(1))
                    colon = head[:k].rfind(")")
                    init = INIT_LIST.search(head[:k]) if colon >= 0 else None
                    if not init:
                        return name
    m = re.search(r"(\w+)\s*\(", head)  # a lambda's: the name of what it initializes
    return m.group(1) if m else "?"


def reason_above(lines, first_line):
    """Whether the line above `first_line` (1-based), or the comment block
    that ends there, says why the function is long."""
    k = first_line - 2
    if k < 0:
        return False
    if LONG_REASON in lines[k]:
        return True
    while k >= 0 and re.match(r"\s*(//|/\*|\*)", lines[k]):
        if LONG_REASON in lines[k]:
            return True
        k -= 1
    return False


def long_functions(text):
    """[(name, first line, length)] of the functions over MAX_FUNCTION_LINES
    lines without a reason above them."""
    lines = text.split("\n")
    out = []
    for name, first, last in functions(blank_code(text)):
        length = last - first + 1
        if length > MAX_FUNCTION_LINES and not reason_above(lines, first):
            out.append((name, first, length))
    return out


def check(root):
    rules = read_rules(os.path.join(root, "docs", "architecture.md"))
    errors = []
    checked = 0
    for base, _, files in os.walk(os.path.join(root, "src")):
        for name in sorted(files):
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.join(base, name)
            rel = os.path.relpath(path, root)
            layer = layer_of_file(rel)
            text = open(path, encoding="utf-8", errors="replace").read()
            checked += 1
            code = strip_comments(text)
            for fname, lineno, length in long_functions(text):
                errors.append(f"{rel}:{lineno}: {fname} is {length} lines (over {MAX_FUNCTION_LINES}) with no "
                              f"'// {LONG_REASON} <why>' line above it; split it, or say why not")
            if layer == "store":
                for cls, member, at in public_data_in_classes_with_behaviour(code):
                    lineno = code.count("\n", 0, at) + 1
                    errors.append(f"{rel}:{lineno}: class {cls} has behaviour and a public data member ({member})")
            if layer is not None and layer != "testing" and rel not in TIER_FACTORY:
                for lineno in tier_kind_compares(code):
                    errors.append(f"{rel}:{lineno}: tells tiers apart by a kind or name; ask the tier's space")
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                lineno = text.count("\n", 0, m.start()) + 1
                target = layer_of_include(inc)
                if target == "store" and layer != "store":
                    header = inc.split("/")[-1]
                    allowed = STORE_PUBLIC | (STORE_TEST_ONLY if rel.startswith("src/test/") else set())
                    if header not in allowed:
                        errors.append(f"{rel}:{lineno}: includes the store's internals ({inc})")
                if layer is None or target is None or target == layer:
                    continue
                if layer not in rules:
                    errors.append(f"{rel}:{lineno}: layer '{layer}' is not in the table of docs/architecture.md")
                    continue
                if target == "testing":
                    errors.append(f"{rel}:{lineno}: product layer '{layer}' includes the test-only {inc}")
                elif target not in rules[layer]:
                    errors.append(f"{rel}:{lineno}: layer '{layer}' includes {inc} ('{target}' is not below it)")
    return checked, errors


def self_test():
    """The check must catch an upward include; a clean copy must pass."""
    here = os.path.dirname(os.path.abspath(__file__))
    src_root = os.path.dirname(here)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(src_root, "docs"), os.path.join(tmp, "docs"))
        os.makedirs(os.path.join(tmp, "src", "hybridstore", "kv"))
        os.makedirs(os.path.join(tmp, "src", "hybridstore", "format"))
        ok = os.path.join(tmp, "src", "hybridstore", "kv", "ok.cc")
        with open(ok, "w") as f:
            f.write('#include "hybridstore/format/x.h"\n')
        _, errors = check(tmp)
        if errors:
            return f"a downward include was refused: {errors}"
        bad = os.path.join(tmp, "src", "hybridstore", "format", "bad.cc")
        with open(bad, "w") as f:
            f.write('#include "hybridstore/format/y.h"\n#include "hybridstore/store/hybrid_store.h"\n')
        _, errors = check(tmp)
        if len(errors) != 1 or "bad.cc:2" not in errors[0]:
            return f"an upward include (format -> store) was not reported once: {errors}"
        with open(bad, "w") as f:
            f.write('#include "testing/fault_injection.h"\n')
        _, errors = check(tmp)
        if len(errors) != 1 or "test-only" not in errors[0]:
            return f"a product include of testing/ was not reported: {errors}"
        os.remove(bad)
        os.makedirs(os.path.join(tmp, "src", "testing"))
        above = os.path.join(tmp, "src", "testing", "above.cc")
        with open(above, "w") as f:
            f.write('#include "hybridstore/store/hybrid_store.h"\n#include "hybridstore/ceph/op_policy.h"\n')
        _, errors = check(tmp)
        if len(errors) != 1 or "above.cc:2" not in errors[0]:
            return f"an include above the test-only library (testing -> ceph) was not reported once: {errors}"
        os.remove(above)
        os.makedirs(os.path.join(tmp, "src", "hscommon"))
        low = os.path.join(tmp, "src", "hscommon", "low.cc")
        with open(low, "w") as f:
            f.write('#include "hscommon/log.h"\n#include "hsio/block_device.h"\n')
        _, errors = check(tmp)
        if len(errors) != 1 or "low.cc:2" not in errors[0]:
            return f"an upward include (hscommon -> hsio) was not reported once: {errors}"
        os.remove(low)
        os.makedirs(os.path.join(tmp, "src", "hybridstore", "store"))
        part = os.path.join(tmp, "src", "hybridstore", "store", "part.h")
        with open(part, "w") as f:
            f.write("struct Plain {\n  int a = 0;\n  std::function<void(int)> cb;\n  Plain() = default;\n"
                    "  uint64_t size() const;\n  static Plain of(int);\n};\n"
                    "class Good {\n public:\n  static constexpr int kLimit = 4;\n  void run();\n"
                    " private:\n  int state_{0};\n};\n")
        _, errors = check(tmp)
        if errors:
            return f"a plain struct or a class with private state was refused: {errors}"
        with open(part, "w") as f:
            f.write("class God {\n public:\n  int mount();\n  std::unique_ptr<Db> db_;\n"
                    "  bool mounted_ = false;  // a comment { with a brace\n};\n"
                    "struct Handler : Base {\n  Batch* to;\n  int Put() override { return 0; }\n};\n")
        _, errors = check(tmp)
        if len(errors) != 3 or not all("public data member" in e for e in errors):
            return f"public data members of classes with behaviour were not reported: {errors}"
        os.remove(part)
        os.makedirs(os.path.join(tmp, "src", "hybridstore", "txn_json"))
        user = os.path.join(tmp, "src", "hybridstore", "txn_json", "user.cc")
        with open(user, "w") as f:
            f.write('#include "hybridstore/store/hybrid_store.h"\n#include "hybridstore/store/tier_set.h"\n')
        _, errors = check(tmp)
        if len(errors) != 1 or "user.cc:2" not in errors[0] or "internals" not in errors[0]:
            return f"an include of the store's internals was not reported once: {errors}"
        with open(user, "w") as f:
            f.write('// a layout of kind "nand" == raw flash, in a comment\n'
                    'bool raw = d->kind != "nand";\nbool ssd = tier_name(t) == std::string("ssd") || '
                    '"hdd" == name;\nconst char* n = "ssd";\n')
        _, errors = check(tmp)
        if len(errors) != 2 or "user.cc:2" not in errors[0] or "user.cc:3" not in errors[1]:
            return f"tier-kind string compares were not reported: {errors}"
        os.makedirs(os.path.join(tmp, "src", "hybridstore", "space"))
        os.rename(user, os.path.join(tmp, "src", "hybridstore", "space", "tier_space.cc"))
        _, errors = check(tmp)
        if errors:
            return f"the tier factory may tell tiers apart, but was refused: {errors}"
        why = self_test_long_functions(tmp)
        if why:
            return why
    return None


def self_test_long_functions(tmp):
    """A function over MAX_FUNCTION_LINES lines is reported unless a reason
    stands above it; braces in literals and comments, digit separators,
    brace initializers and long tables are not functions."""
    os.makedirs(os.path.join(tmp, "src", "tools"), exist_ok=True)
    path = os.path.join(tmp, "src", "tools", "long.cc")
    body = "".join(f"  x += {i};\n" for i in range(MAX_FUNCTION_LINES))
    table = "".join(f"    {{{i}, '}}'}},\n" for i in range(MAX_FUNCTION_LINES + 10))
    short = ("namespace hs {\n"
             "const Row kRows[] = {\n" + table + "};\n"
             "// a comment with a brace {\n"
             "class Ok : public Base {\n public:\n"
             "  Ok() : a_{1}, b_(2) {}\n"
             "  int small() const override { return '{' + 1'000; }\n"
             "};\n"
             "const char* s = \"}}}\";\n")

    def write(prefix):
        with open(path, "w") as f:
            f.write(short + prefix + "int Ok::sum(int x) const {\n" + body + "  return x;\n}\n}  // namespace hs\n")

    write("")
    _, errors = check(tmp)
    if len(errors) != 1 or "long.cc:" not in errors[0] or "Ok::sum" not in errors[0]:
        return f"a function of {MAX_FUNCTION_LINES + 3} lines without a reason was not reported once: {errors}"
    write("// Long on purpose: one line per term.\n")
    _, errors = check(tmp)
    if errors:
        return f"a long function with its reason above it was refused: {errors}"
    write("// Long on purpose: one line per term,\n// and more said below.\ntemplate <typename T>\n")
    _, errors = check(tmp)
    if errors:
        return f"a long function with its reason in the comment block above was refused: {errors}"
    write("// Long, as it is.\n")
    _, errors = check(tmp)
    if len(errors) != 1:
        return f"a long function with a comment that gives no reason was not reported: {errors}"
    os.remove(path)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="project root (default: the checkout this script is in)")
    ap.add_argument("--self-test", action="store_true", help="check that the check catches violations, then run it")
    args = ap.parse_args()
    if args.self_test:
        why = self_test()
        if why:
            print(f"layering-check: self-test FAILED: {why}")
            return 1
        print("layering-check: self-test passed (an upward include, a product include of testing/, an include of "
              "the store's internals, public data in store/ classes with behaviour, tier-kind string compares "
              "and long functions without a reason are caught)")
    checked, errors = check(args.root)
    for e in errors:
        print(e)
    if errors:
        print(f"layering-check: FAILED, {len(errors)} finding(s) against docs/architecture.md's rules")
        return 1
    print(f"layering-check: {checked} files, every include goes down and the house rules hold (docs/architecture.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
