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
# Its progress lines show (qa/watchdog.py takes a silent check for a hung one).
cmake --build "$FUZZ_BUILD" -j "${JOBS:-$(nproc)}" --target fuzz_all
# A fixed seed (HS_FUZZ_SEED, else HS_QA_SEED, else 1); `make fuzz` draws one.
qa/fuzz/run.sh "$FUZZ_BUILD" "${HS_FUZZ_SECONDS:-10}" "${HS_FUZZ_SEED:-${HS_QA_SEED:-1}}"
