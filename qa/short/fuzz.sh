#!/bin/sh
# Short fuzz runs (CI): builds the libFuzzer targets with clang in their own
# directory (<build>-fuzz; only the decoders under test and the shared
# primitives are compiled) and runs each for 10 s. `make fuzz` runs 60 s each.
set -eu
BUILD=${1:-build}
FUZZ_BUILD=${HS_FUZZ_BUILD:-$BUILD-fuzz}
command -v clang++ >/dev/null || { echo "fuzz: clang++ is needed (make deps installs it)" >&2; exit 1; }
if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$FUZZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHS_FUZZ=ON -DHS_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$FUZZ_BUILD" -j "${JOBS:-$(nproc)}" --target fuzz_all >/dev/null
qa/fuzz/run.sh "$FUZZ_BUILD" "${HS_FUZZ_SECONDS:-10}"
