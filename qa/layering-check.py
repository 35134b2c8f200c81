#!/usr/bin/env python3
"""Fails when a source file includes a layer it may not call.

The rules are the table "Allowed includes" in docs/architecture.md: each row
names a layer (a folder under src/hybridstore/, or one of the libraries that
are folders of src/ themselves, TOP_LAYERS) and the layers its files may
include. Everything else under src/ (tools, tests, fuzz targets) may include
any layer. Two more rules from the same page:
  - no product layer includes src/testing/ (the test-only library);
  - store/store_impl.h, the facade's internals, is included only by store/
    and by tests under src/test/.

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
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                lineno = text.count("\n", 0, m.start()) + 1
                target = layer_of_include(inc)
                if inc == "hybridstore/store/store_impl.h" and layer != "store" and not rel.startswith("src/test/"):
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
    # (file, its text, what the one error must name, what the case shows),
    # each file checked alone beside a clean one.
    cases = [
        ("src/hybridstore/format/bad.cc",
         '#include "hybridstore/format/y.h"\n#include "hybridstore/store/hybrid_store.h"\n',
         "bad.cc:2", "an upward include (format -> store)"),
        ("src/hybridstore/format/bad.cc", '#include "testing/fault_injection.h"\n',
         "test-only", "a product include of testing/"),
        ("src/testing/above.cc",
         '#include "hybridstore/store/hybrid_store.h"\n#include "hybridstore/ceph/op_policy.h"\n',
         "above.cc:2", "an include above the test-only library (testing -> ceph)"),
        ("src/hscommon/low.cc", '#include "hscommon/log.h"\n#include "hsio/block_device.h"\n',
         "low.cc:2", "an upward include (hscommon -> hsio)"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        def write(rel, text):
            path = os.path.join(tmp, *rel.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            return path

        shutil.copytree(os.path.join(src_root, "docs"), os.path.join(tmp, "docs"))
        write("src/hybridstore/kv/ok.cc", '#include "hybridstore/format/x.h"\n')
        _, errors = check(tmp)
        if errors:
            return f"a downward include was refused: {errors}"
        for rel, text, needle, what in cases:
            path = write(rel, text)
            _, errors = check(tmp)
            os.remove(path)
            if len(errors) != 1 or needle not in errors[0]:
                return f"{what} was not reported once: {errors}"
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
        print("layering-check: self-test passed (upward includes and a product include of testing/ are caught)")
    checked, errors = check(args.root)
    for e in errors:
        print(e)
    if errors:
        print(f"layering-check: FAILED, {len(errors)} include(s) against docs/architecture.md's table")
        return 1
    print(f"layering-check: {checked} files, every include goes down (docs/architecture.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
