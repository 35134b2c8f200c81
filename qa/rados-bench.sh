#!/bin/sh
# The rados-bench-style table of docs/benchmarks.md in one run: for 4 MiB and
# 4 KiB objects, `write --no-cleanup`, then `seq` and `rand` over what it
# wrote, 16 in flight, each with its raw device ceiling (same block size and
# queue depth, measured right after the store's run). Prints a Markdown
# table; the JSON of every run stays in $OUT.
#   qa/rados-bench.sh [BUILD]   (RADOS_SECONDS per run, default 10;
#                                BENCH_DIR for the stores, default bench-out)
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
B="$BUILD/bin/hybridstore-bench"
OUT=${BENCH_DIR:-bench-out}/rados
SECONDS_PER_RUN=${RADOS_SECONDS:-10}
rm -rf "$OUT"
mkdir -p "$OUT"
for bs in 4M 4K; do
  S="$OUT/store-$bs"
  "$B" write -b "$bs" -t 16 --seconds "$SECONDS_PER_RUN" --no-cleanup --path "$S" --json "$OUT/write-$bs.json"
  "$B" seq -t 16 --seconds "$SECONDS_PER_RUN" --path "$S" --json "$OUT/seq-$bs.json"
  "$B" rand -t 16 --seconds "$SECONDS_PER_RUN" --path "$S" --json "$OUT/rand-$bs.json"
  rm -rf "$S"
done
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
print()
print("| object size | mode | store MB/s | IOPS | avg lat (ms) | p99 lat (ms) | raw ceiling MB/s | store / raw |")
print("|---|---|---|---|---|---|---|---|")
for bs in ("4M", "4K"):
    for mode in ("write", "seq", "rand"):
        j = json.load(open(os.path.join(out, "%s-%s.json" % (mode, bs))))
        s = j["summary"]
        raw = j.get("raw_ceiling")
        print("| %s | %s | %.1f | %d | %.2f | %.2f | %s | %s |" % (
            bs, mode, s["bandwidth"], s["average_iops"], 1e3 * s["average_latency"],
            1e3 * j["latency_percentiles"]["p99"], "%.1f" % raw["mb_s"] if raw else "-",
            "%.2f" % j["store_over_raw"] if raw else "-"))
load = json.load(open(os.path.join(out, "write-4M.json")))["machine"]["loadavg"]
print()
print("load average at the start: %.1f %.1f %.1f" % tuple(load))
PY
