#!/bin/sh
# hybridstore-bench's rados-style modes as an operator runs them: bad input
# refused before anything is written (exit 2, or 1 when there is nothing to
# read), a short run of each mode printing rados bench's lines and summary,
# the JSON record's schema, reads that catch wrong bytes, the plotted report,
# and `hybridstore-tool perf dump|schema`. Seeds are fixed and printed by
# the bench.
set -eu
BUILD=${1:-build}
BIN="$(cd "$BUILD/bin" && pwd)"
B="$BIN/hybridstore-bench"
TOOL="$BIN/hybridstore-tool"
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
S="$W/store"
SMALL="--set hybridstore_ssd_size=512M --set hybridstore_hdd_size=2G"
fail() { echo "FAIL: $*" >&2; exit 1; }

# refused RC WORDS CMD...: CMD exits with RC and says WORDS on stderr.
refused() {
  want=$1 words=$2
  shift 2
  set +e
  "$@" >"$W/out" 2>"$W/err" </dev/null
  rc=$?
  set -e
  [ "$rc" = "$want" ] || fail "exit $rc (want $want): $* :: $(cat "$W/err")"
  grep -q -- "$words" "$W/err" || fail "message lacks '$words': $* :: $(cat "$W/err")"
}

# --help everywhere.
"$B" --help | grep -q "randwrite" || fail "--help lists the modes"
for m in write seq rand randwrite mixed demo report core compare; do
  "$B" "$m" --help >/dev/null || fail "$m --help"
done
"$B" write --help | grep -q -- "--concurrent-ios" || fail "write --help shows -t"
"$TOOL" perf --help | grep -q "schema" || fail "perf --help"
"$TOOL" perf dump --help >/dev/null || fail "perf dump --help"

# compare: a short run of the small-write rows on both SSD kinds (raw figures
# in process, so no fio needed): the table with its ratios, and a clean deep
# fsck after each kind.
refused 2 "unknown SSD kind" "$B" compare --kinds disk --dir "$W/c0"
refused 2 "unknown row 'all'" "$B" compare --rows all --dir "$W/c0"
"$B" compare --dir "$W/cmp" --rows create1,createN --writers 4 --seconds 1 --raw-seconds 1 \
  $SMALL --json "$W/cmp.json" >"$W/cmp.out" 2>&1 || fail "compare: $(tail -5 "$W/cmp.out")"
grep -q "store / raw" "$W/cmp.out" || fail "compare prints its table"
grep -q "^  average us: state_prepare_lat [0-9.]* .*commit_lat [0-9.]*" "$W/cmp.out" ||
  fail "compare: where the small writes' time went"
grep -q "^raw 8 KiB write+fdatasync, 1 job: [0-9]* IOPS" "$W/cmp.out" || fail "compare: the two-block ceiling of one writer"
[ "$(grep -c "fsck --deep after the run: clean" "$W/cmp.out")" = 2 ] || fail "compare: deep fsck after both kinds"
# The random-read row reads a fixed data set (--read-objects), written first
# where the create rows left fewer, and never one the onode cache can hold.
refused 2 "does not exceed --onode-cache" "$B" compare --read-objects 1000 --onode-cache 1024 --dir "$W/c0"
"$B" compare --dir "$W/rr" --kinds nand --rows randread --writers 4 --seconds 0.3 --raw-seconds 0.3 \
  --onode-cache 64 --read-objects 20000 $SMALL >"$W/rr.out" 2>&1 || fail "compare randread: $(tail -5 "$W/rr.out")"
written=$(sed -n 's/^random reads: 20000 objects of 4 KiB (of \([0-9]*\) written) read at random.*/\1/p' "$W/rr.out")
[ -n "$written" ] && [ "$written" -ge 20000 ] || fail "compare: the random-read row's data set: $(grep -i random "$W/rr.out")"
grep -q "fsck --deep after the run: clean" "$W/rr.out" || fail "compare randread: deep fsck"
[ ! -e "$W/c0" ] || fail "compare made something before refusing"
# The allocator the figures were taken on (CPU per operation depends on it):
# the one the build links, named in the output and the JSON.
needed=$(readelf -d "$B" | grep NEEDED)
case "$needed" in
  *libtcmalloc*) want_malloc=tcmalloc ;;
  *libasan*) want_malloc=asan ;;
  *libtsan*) want_malloc=tsan ;;
  *) want_malloc=glibc ;;
esac
if grep -qx 'HS_TOOL_ALLOCATOR:INTERNAL=tcmalloc' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  [ "$want_malloc" = tcmalloc ] || fail "HS_ALLOCATOR=tcmalloc, yet the bench does not link libtcmalloc"
fi
grep -qx "malloc: $want_malloc" "$W/cmp.out" || fail "compare names its allocator ($want_malloc)"
python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["malloc"] == sys.argv[2] else 1)' \
  "$W/cmp.json" "$want_malloc" || fail "compare: the allocator in the JSON"
# The JSON's rows: keys in the order written (malloc first), the CPU named for
# what it is divided by, stage averages by name, groups where measured.
python3 - "$W/cmp.json" <<'PY' || fail "compare: the rows in the JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert list(j)[0] == "malloc", list(j)
for kind in ("file", "nand"):
    rows = {r["work"]: r for r in j[kind]}
    for work in ("4 KiB creates, 1 writer", "4 KiB creates, 4 writers"):
        r = rows[work]
        assert r["cpu_us_per_txn"] > 0 and "cpu_us_per_op" not in r and "cpu_us_per_read" not in r, r
        assert r["stage_avg_us"]["commit_lat"] > 0, r
    assert rows["4 KiB creates, 4 writers"]["txns_per_group"] >= 1, rows
    assert "txns_per_group" not in rows["4 KiB creates, 1 writer"], rows
PY
# With fio, a read row also gets the raw device read by as many synchronous
# readers as the store has (fio's own row keeps them all in flight from one
# thread), in the table's notes and in the JSON.
if fio --version >/dev/null 2>&1; then
  "$B" compare --dir "$W/cmpr" --kinds file --rows randread --writers 4 --seconds 1 --raw-seconds 1 \
    --fio-compare $SMALL --json "$W/cmpr.json" >"$W/cmpr.out" 2>&1 || fail "compare --fio-compare: $(tail -5 "$W/cmpr.out")"
  grep -qE "^\| 4 KiB random reads, 4 in flight +\| [0-9]+ IOPS \(fio\)" "$W/cmpr.out" || fail "compare: fio's random reads"
  grep -qE "^4 KiB random reads, 4 in flight: raw with 4 synchronous readers \(fio psync, 4 threads, one file\): [0-9]+ IOPS; store / that: [0-9]+\.[0-9]+$" \
    "$W/cmpr.out" || fail "compare: random reads against synchronous readers: $(cat "$W/cmpr.out")"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["file_store_over_sync_readers"]["4 KiB random reads, 4 in flight"]; sys.exit(0 if r > 0 else 1)' \
    "$W/cmpr.json" || fail "compare: the synchronous readers' ratio in the JSON"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["file"][0]; sys.exit(0 if r["cpu_us_per_read"] > 0 and "cpu_us_per_txn" not in r else 1)' \
    "$W/cmpr.json" || fail "compare: the CPU per read in the JSON"
  # Sequential reads: each synchronous reader its own part of fio's file,
  # as the store's readers read different objects (all from offset 0 they
  # would read the same blocks in step). A fio on PATH before the real one
  # records how the bench calls it. The work directory's name has a space
  # and a quote in it: the bench hands fio its path through the shell.
  mkdir -p "$W/fioshim"
  REAL_FIO=$(command -v fio)
  printf '#!/bin/sh\necho "$*" >>"%s"\nexec "%s" "$@"\n' "$W/fio-calls" "$REAL_FIO" >"$W/fioshim/fio"
  chmod +x "$W/fioshim/fio"
  PATH="$W/fioshim:$PATH" "$B" compare --dir "$W/cmp s'q" --kinds file --rows write4m seqread --writers 4 --objects 16 \
    --seconds 1 --raw-seconds 1 --fio-compare $SMALL >"$W/cmps.out" 2>&1 || fail "compare --fio-compare seqread: $(tail -5 "$W/cmps.out")"
  grep -qE "^4 MiB sequential reads, 4 in flight: raw with 4 synchronous readers \(fio psync, 4 threads, one file\): [0-9]+ MiB/s; store / that: [0-9]+\.[0-9]+$" \
    "$W/cmps.out" || fail "compare: sequential reads against synchronous readers: $(cat "$W/cmps.out")"
  python3 - "$W/fio-calls" <<'PY' || fail "compare: fio's synchronous sequential readers do not each read their own part: $(cat "$W/fio-calls")"
import sys
calls = [l.split() for l in open(sys.argv[1]) if "--rw=read" in l and "psync" in l]
assert len(calls) == 1, calls
opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in calls[0] if a.startswith("--") and "=" in a}
per, jobs = int(opt["--size"]), int(opt["--numjobs"])
assert jobs == 4 and int(opt["--offset_increment"]) == per and int(opt["--filesize"]) == per * jobs, opt
assert per % int(opt["--bs"]) == 0, opt
PY
else
  echo "SKIPPED: compare --fio-compare (fio is not installed; make deps installs it)"
fi

# Bad input: refused before a store or a file is made.
refused 2 "unknown mode" "$B" nosuchmode
refused 2 "block-size" "$B" write -b 0 --path "$W/s0"
refused 2 "block-size" "$B" write --block-size=-4096 --path "$W/s0"
refused 2 "block-size" "$B" write -b 4X --path "$W/s0"
refused 2 "object-size" "$B" write -b 4K -O 6K --path "$W/s0"
refused 2 "concurrent-ios" "$B" write -t 0 --path "$W/s0"
refused 2 "seconds" "$B" write --seconds 0 --path "$W/s0"
refused 2 "seconds" "$B" rand --seconds -3 --path "$W/s0"
refused 2 "max-objects" "$B" randwrite --max-objects 0 --path "$W/s0"
refused 2 "object-mix" "$B" write --object-mix 4K:0 --path "$W/s0"
refused 2 "xattrs" "$B" write --xattrs 65 --path "$W/s0"
refused 2 "omap-keys" "$B" write --omap-keys -1 --path "$W/s0"
refused 2 "profile" "$B" mixed --profile nosuch --path "$W/s0"
refused 2 "give --path" "$B" seq
: >"$W/afile"
refused 2 "report" "$B" write --report "$W/afile/sub" --path "$W/s0"
refused 2 "json" "$B" write --json "$W/nodir/x.json" --path "$W/s0"
[ ! -e "$W/s0" ] || fail "a refused command made $W/s0"
refused 1 "no store" "$B" seq --path "$W/s0"
[ ! -e "$W/s0" ] || fail "seq made a store"
"$TOOL" --path "$S" $SMALL mkfs >/dev/null
refused 1 "Must write data before running a read benchmark" "$B" seq --path "$S"

# write --xattrs/--omap-keys: every object carries them (fsck counts 3 omap
# entries for each of the 40 objects).
"$B" write --object-mix 512:1,4K:1 --xattrs 2 --omap-keys 3 --max-objects 40 --seconds 30 --raw-seconds 0 \
  --no-cleanup --path "$W/meta" $SMALL >"$W/meta.out" 2>&1 || fail "write --xattrs: $(cat "$W/meta.out")"
grep -q "^Each object created with 2 attributes and 3 omap keys of 64 bytes$" "$W/meta.out" ||
  fail "write --xattrs: preamble"
"$TOOL" --path "$W/meta" fsck >"$W/meta.fsck" 2>&1 || fail "fsck after write --xattrs: $(cat "$W/meta.fsck")"
grep -q " 120 omap entries: clean" "$W/meta.fsck" || fail "write --omap-keys: $(cat "$W/meta.fsck")"
rm -rf "$W/meta"

# write: rados bench's lines and summary, in its order, then the raw ceiling.
"$B" write -b 64K -t 4 --seconds 2 --no-cleanup --path "$S" --raw-seconds 1 --json "$W/write.json" \
  >"$W/write.out" 2>"$W/write.err" || fail "write: $(cat "$W/write.err")"
grep -q "^  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)$" "$W/write.out" ||
  fail "write: status header"
grep -qE "^    1 +[0-9]+ +[0-9]+ +[0-9]+ " "$W/write.out" || fail "write: a status line per second"
grep -q "^Maintaining 4 concurrent writes of 65536 bytes to objects of size 65536 for up to 2 seconds or 0 objects$" \
  "$W/write.out" || fail "write: preamble"
in_order() {  # in_order FILE LABEL...: each label starts a line, in this order
  f=$1
  shift
  last=0
  for l in "$@"; do
    n=$(grep -n -F -- "$l" "$f" | head -1 | cut -d: -f1)
    [ -n "$n" ] && [ "$n" -gt "$last" ] || fail "$f: '$l' missing or out of order"
    last=$n
  done
}
in_order "$W/write.out" "Total time run:         " "Total writes made:      " "Write size:             65536" \
  "Object size:            65536" "Bandwidth (MB/sec):     " "Stddev Bandwidth:       " "Max bandwidth (MB/sec): " \
  "Min bandwidth (MB/sec): " "Average IOPS:           " "Stddev IOPS:            " "Max IOPS:               " \
  "Min IOPS:               " "Average Latency(s):     " "Stddev Latency(s):      " "Max latency(s):         " \
  "Min latency(s):         " "Raw ceiling (MB/sec):   " "Store / raw ceiling:    "

# seq and rand read it back, every byte checked.
for m in seq rand; do
  "$B" "$m" -t 4 --seconds 2 --path "$S" --raw-seconds 1 --json "$W/$m.json" >"$W/$m.out" 2>"$W/$m.err" ||
    fail "$m: $(cat "$W/$m.err")"
  in_order "$W/$m.out" "Total time run:       " "Total reads made:     " "Read size:            65536" \
    "Object size:          65536" "Bandwidth (MB/sec):   " "Average IOPS:         " "Stddev IOPS:          " \
    "Max IOPS:             " "Min IOPS:             " "Average Latency(s):   " "Max latency(s):       " \
    "Min latency(s):       " "Raw ceiling (MB/sec): "
done

# The JSON record: every field the report and docs rely on, consistent.
python3 - "$W/write.json" "$W/seq.json" "$W/rand.json" <<'PY' || fail "JSON schema"
import json, sys
for path in sys.argv[1:]:
    j = json.load(open(path))
    assert j["schema"] == "hybridstore-bench/1", path
    mode = j["mode"]
    for k in ("command", "date", "seed", "machine", "store", "options", "summary", "latency_percentiles",
              "latency_cdf", "series", "raw_ceiling", "store_over_raw", "perf", "tiers"):
        assert k in j, (path, k)
    s = j["summary"]
    made = s["total_writes_made"] if mode == "write" else s["total_reads_made"]
    assert made > 0 and s["bytes"] == made * 65536, (path, s)
    assert s["verify_errors"] == 0
    p = j["latency_percentiles"]
    assert s["min_latency"] <= p["p50"] <= p["p90"] <= p["p99"] <= p["p99.9"] <= s["max_latency"], p
    cdf = j["latency_cdf"]
    assert cdf[-1][1] == 1.0 and all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(cdf, cdf[1:]))
    ser = j["series"]
    n = len(ser["sec"])
    # A line a second from 0; seq may read everything within the first.
    assert n >= (2 if mode == "write" else 1) and ser["sec"] == list(range(n)), ser["sec"]
    for k in ("cur_ops", "started", "finished", "avg_mb_s", "cur_mb_s", "iops", "last_lat", "avg_lat"):
        assert len(ser[k]) == n, k
    for k, v in ser["perf"].items():
        assert len(v) == n, k
    assert ser["finished"] == sorted(ser["finished"]) and ser["finished"][-1] <= made
    raw = j["raw_ceiling"]
    assert raw["mb_s"] > 0 and raw["queue_depth"] == 4 and raw["block_size"] == 65536, raw
    assert abs(j["store_over_raw"] - s["bandwidth"] / raw["mb_s"]) < 1e-6
    d = j["perf"]["delta"]["hybridstore"]
    if mode == "write":
        assert d["txc"] >= made and d["commit_lat"]["avgcount"] >= made, d["txc"]
    else:
        assert d["read_lat"]["avgcount"] == made and d["read_bytes"] == s["bytes"], d["read_lat"]
    assert j["tiers"]["ssd"]["total"] > 0 and j["tiers"]["hdd"]["total"] > 0
PY

# A wrong byte is caught: overwrite the start of object 0 behind the bench's back.
prefix=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["prefix"])' "$W/write.json")
cat >"$W/damage.json" <<JSON
[{"ops": [{"op": "write", "coll": "1.0_head", "oid": {"name": "${prefix}_object0", "pool": 1}, "off": 100,
           "data": "not the pattern"}]}]
JSON
"$TOOL" --path "$S" txn "$W/damage.json" >/dev/null || fail "damage txn"
set +e
"$B" seq -t 2 --seconds 2 --path "$S" --raw-seconds 0 >"$W/bad.out" 2>"$W/bad.err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "seq over a damaged object exits $rc"
grep -q "${prefix}_object0 is not correct!" "$W/bad.err" || fail "seq names the damaged object"
grep -q "^Verification errors:" "$W/bad.out" || fail "seq reports verification errors"

# perf dump and schema: Ceph's shapes.
"$TOOL" --path "$S" perf dump >"$W/dump.json" || fail "perf dump"
"$TOOL" --path "$S" perf schema >"$W/schema.json" || fail "perf schema"
python3 - "$W/dump.json" "$W/schema.json" <<'PY' || fail "perf JSON"
import json, sys
d = json.load(open(sys.argv[1]))["hybridstore"]
s = json.load(open(sys.argv[2]))["hybridstore"]
assert set(d) == set(s) and len(d) > 40
assert set(d["commit_lat"]) == {"avgcount", "sum", "avgtime"}
assert s["commit_lat"]["type"] == 5 and s["txc"]["type"] == 10 and s["ssd_bytes_used"]["type"] == 2
assert d["ssd_bytes_used"] + d["hdd_bytes_used"] > 0 and d["ssd_objects"] + d["hdd_objects"] > 0
PY

# write without --no-cleanup removes its objects and its metadata.
"$B" write -b 4K -t 2 --seconds 1 --path "$W/s2" $SMALL --raw-seconds 0 >"$W/w2.out" 2>&1 || fail "write 2"
grep -q "^Removed [0-9]* objects$" "$W/w2.out" || fail "cleanup line"
refused 1 "Must write data" "$B" seq --path "$W/s2"

# randwrite: small overwrites (the RBD pattern), every block checked against
# its last write.
"$B" randwrite -t 4 --seconds 2 --max-objects 4 -O 1M -b 4K --path "$W/s3" $SMALL --raw-seconds 0 \
  --json "$W/rw.json" >"$W/rw.out" 2>"$W/rw.err" || fail "randwrite: $(cat "$W/rw.err")"
grep -q "^Verified 4 objects: every block as last written$" "$W/rw.out" || fail "randwrite verification"
grep -q "^Total writes made:      " "$W/rw.out" || fail "randwrite summary"
# CPU per op over the timed phase only (getrusage of the whole process):
# what the small-write design (docs/small-writes.md) is measured by. The
# summary's figure is the JSON's, user + sys add up to it, it is neither
# zero nor absurd, and it is no more than the machine's cores could give in
# the timed seconds (so setup before them is not in it).
python3 - "$W/rw.json" "$W/rw.out" <<'PY' || fail "randwrite CPU per op"
import json, re, sys
j = json.load(open(sys.argv[1]))
s = j["summary"]
n = s["total_writes_made"]
assert n > 0, s
per_op = s["cpu_us_per_op"]
assert abs(per_op - (s["cpu_user_seconds"] + s["cpu_sys_seconds"]) * 1e6 / n) < 0.01 * per_op + 1e-9, s
assert 1 <= per_op <= 100000, s
assert s["cpu_user_seconds"] > 0 and s["cpu_sys_seconds"] >= 0, s
# Not more CPU than the threads could have had in the run (2 s x cores).
import os
assert s["cpu_user_seconds"] + s["cpu_sys_seconds"] <= s["total_time_run"] * os.cpu_count() * 1.05 + 0.05, s
m = re.search(r"^CPU per op \(us\):        ([0-9.]+) \(user ([0-9.]+), sys ([0-9.]+)\)$", open(sys.argv[2]).read(), re.M)
assert m, "no CPU per op line in the summary"
assert abs(float(m.group(1)) - per_op) <= 0.06, (m.group(0), per_op)
assert abs(float(m.group(2)) + float(m.group(3)) - per_op) <= 0.2, m.group(0)
PY

# With onode deltas (hybridstore_small_write_journal=on) and a ring of a
# few dozen records, 16 writers sharing the objects keep the ring full while
# changes of dirty objects wait behind it, uncommitted: the onode
# checkpointer must still free what the committed ones hold (this run hung
# before it could, at this seed: the stall depends on timing), and every
# block must read back as last written.
rc=0
timeout 120 "$B" randwrite -t 16 --seconds 3 --seed 4 --max-objects 16 -O 1M -b 4K --path "$W/s4" $SMALL --raw-seconds 0 \
  --set hybridstore_small_write_journal=on --set hybridstore_commit_journal_size=256K \
  >"$W/rw4.out" 2>"$W/rw4.err" || rc=$?
[ "$rc" = 0 ] || fail "randwrite with onode deltas on a 256K ring: exit $rc (124: it stalled): $(tail -3 "$W/rw4.err")"
grep -q "^Verified 16 objects: every block as last written$" "$W/rw4.out" || fail "randwrite with onode deltas: verification"

# mixed: a short trace on a fresh temporary store; migration passes run.
"$B" mixed -t 4 --seconds 8 --scale 0.002 --days 2 --raw-seconds 0 --json "$W/mixed.json" \
  >"$W/mixed.out" 2>"$W/mixed.err" || fail "mixed: $(cat "$W/mixed.err")"
grep -q "^Migration passes:       [1-9]" "$W/mixed.out" || fail "mixed: migration passes"
python3 - "$W/mixed.json" <<'PY' || fail "mixed JSON"
import json, sys
j = json.load(open(sys.argv[1]))
m = j["mixed"]
assert m["migration_passes"] >= 1 and m["reads"] + m["writes"] + m["metadata_ops"] == j["summary"]["total_ops_made"]
assert j["perf"]["delta"]["hybridstore"]["migration_passes"] == m["migration_passes"]
PY

# The report: a PNG per plot and an index naming them.
"$B" report --out "$W/rep" "$W/write.json" "$W/rand.json" "$W/mixed.json" >/dev/null 2>"$W/rep.err" ||
  fail "report: $(cat "$W/rep.err")"
for f in write-throughput write-latency-cdf write-tiers write-tiering rand-throughput mixed-tiering; do
  head -c 8 "$W/rep/$f.png" | od -An -c | grep -q "P   N   G" || fail "report: $f.png"
  grep -q "$f.png" "$W/rep/index.html" || fail "index.html lacks $f.png"
done
grep -q "Raw ceiling (MB/sec)" "$W/rep/index.html" || fail "index.html summary table"
echo "bench: all checks passed"
