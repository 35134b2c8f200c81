#!/bin/sh
# Short multi-process checks that run with `make test` (CI). Long soaks have
# their own make targets.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
for t in qa/short/*.sh; do
  [ -e "$t" ] || continue
  echo "== $t"
  sh "$t" "$BUILD"
done
