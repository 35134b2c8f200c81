#!/usr/bin/env bash
# Checks hybridstore-diskmodel against published figures: fio on loop devices
# of the hdd and ssd classes (devclass.sh), a table of measured vs published,
# PASS/FAIL per row, the model's CPU per request from its stats, a data
# check (what goes through the hdd device is exactly what the image holds),
# and the power-cut checks (a flushed write survives a cut, an unflushed one
# does not, or does per 4 KiB block with keep=random; a FUA write reaches the
# model as a write and a flush).
#
#   qa/devclass/check-model.sh [BUILD_DIR [OUT_DIR]]
#
# BUILD_DIR holds bin/hybridstore-diskmodel (default: as devclass.sh finds it);
# the report goes to OUT_DIR/check.json (default: the current directory).
# Environment: CHECK_RUNTIME (seconds per row, 20), CHECK_RAMP (2),
# CHECK_OUT (the JSON report, overrides OUT_DIR), CHECK_SIZE (64G),
# CHECK_ROWS (a regular expression over "class/row" to run a subset; the
# data check is "data/check", the power cuts "powercut/fua",
# "powercut/keep-none", "powercut/keep-random"; a class's disk is attached
# only when one of its rows runs), CHECK_CUT_SEED (the cuts' seed, 20261201),
# TMPDIR (where the sparse images go).
# Exit status: 0 when every row with a range passes and the data check does,
# 1 otherwise, 2 when the classes cannot run here.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=devclass.sh
source "$here/devclass.sh"

if [[ -n ${1:-} ]]; then
  export DEVCLASS_TOOL=$1/bin/hybridstore-diskmodel
  [[ -x $DEVCLASS_TOOL ]] || {
    echo "classes: off ($DEVCLASS_TOOL not built)"
    exit 2
  }
fi
RUNTIME=${CHECK_RUNTIME:-20}
RAMP=${CHECK_RAMP:-2}
SIZE=${CHECK_SIZE:-64G}
OUT=${CHECK_OUT:-${2:-$PWD}/check.json}
mkdir -p "$(dirname "$OUT")" || exit 2
ROWS=${CHECK_ROWS:-.}

if ! no_classes=$(devclass_available); then
  echo "classes: off"
  echo "$no_classes"
  exit 2
fi
for c in fio python3 cmp; do
  command -v $c >/dev/null || {
    echo "classes: off (no $c)"
    exit 2
  }
done

work=$(mktemp -d "${TMPDIR:-/var/tmp}/devclass-check.XXXXXX")
cleanup() {
  devclass_detach_all "$work/powercut" >/dev/null 2>&1 || devclass_detach_all "$work/powercut"
  devclass_detach_all "$work/data" >/dev/null 2>&1 || devclass_detach_all "$work/data"
  devclass_detach_all "$work" >/dev/null 2>&1 || devclass_detach_all "$work"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rows=$work/rows.jsonl
: >"$rows"
failed=0

echo "hybridstore-diskmodel: $(devclass_tool)"
echo "fio $(fio --version), kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "each row: fio libaio direct=1, ${RUNTIME} s after a ${RAMP} s ramp, on a ${SIZE} sparse image"
echo
printf '%-5s %-24s %12s %-8s %-20s %-9s %9s %9s %10s  %s\n' class row measured unit "published" source \
  "lat(us)" "model CPU" "proc CPU" result
printf '%-5s %-24s %12s %-8s %-20s %-9s %9s %9s %10s\n' "" "" "" "" "" "" "mean" "us/req" "us/req"

# run_row CLASS NAME ROW RW BS QD METRIC LO HI SOURCE [fio args...]
# METRIC is iops or mbps; LO/HI empty for a row that only informs.
run_row() {
  local class=$1 name=$2 row=$3 rw=$4 bs=$5 qd=$6 metric=$7 lo=$8 hi=$9 source=${10}
  shift 10
  [[ "$class/$row" =~ $ROWS ]] || return 0
  device_for "$name" || exit 1
  local dev=${devs[$name]}
  if ! devclass_stats "$work" "$name"; then
    failed=1
    return 1
  fi
  cp "$work/$name.stats.json" "$work/before.json"
  fio --name=row --filename="$dev" --ioengine=libaio --direct=1 --rw="$rw" --bs="$bs" --iodepth="$qd" \
    --time_based --runtime="$RUNTIME" --ramp_time="$RAMP" --randseed=4242 --output-format=json "$@" \
    >"$work/fio.json" 2>"$work/fio.err" || {
    echo "fio failed for $class/$row:"
    sed 's/^/  /' "$work/fio.err"
    failed=1
    return 1
  }
  devclass_stats "$work" "$name" || return 1
  python3 - "$work" "$name" "$class" "$row" "$rw" "$bs" "$qd" "$metric" "$lo" "$hi" "$source" "$*" <<'EOF' >>"$rows"
import json, sys
work, name, cls, row, rw, bs, qd, metric, lo, hi, source, extra = sys.argv[1:]
fio = json.load(open(f"{work}/fio.json"))["jobs"][0]
side = fio["write"] if "write" in rw else fio["read"]
a = json.load(open(f"{work}/before.json"))
b = json.load(open(f"{work}/{name}.stats.json"))
reqs = b["cpu_per_request_us"]["requests"] - a["cpu_per_request_us"]["requests"]
def per_req(key):
    return (b["cpu_ns"][key] - a["cpu_ns"][key]) / max(reqs, 1) / 1e3
value = side["iops"] if metric == "iops" else side["bw_bytes"] / 1e6
da, db = a["driver"].get("delivery"), b["driver"].get("delivery")
late = None
if da and db and db["handed_back"] > da["handed_back"]:
    late = (db["late_mean_us"] * db["handed_back"] - da["late_mean_us"] * da["handed_back"]) / (db["handed_back"] - da["handed_back"])
r = {
    "class": cls, "row": row, "rw": rw, "bs": bs, "iodepth": int(qd), "fio_extra": extra,
    "metric": metric, "value": value, "lo": float(lo) if lo else None, "hi": float(hi) if hi else None,
    "source": source, "lat_mean_us": side["clat_ns"]["mean"] / 1e3 if side["clat_ns"]["mean"] else side["lat_ns"]["mean"] / 1e3,
    "requests": reqs,
    "cpu_us_per_request": {k: per_req(k) for k in ("model", "fuse_handlers", "actuator_thread", "process")},
    "handback_late_mean_us": late,
    "model_busy_share": b["driver"].get("model", {}).get("busy_share"),
    "max_request_bytes": b["fs"]["max_request_bytes"],
}
r["pass"] = None if r["lo"] is None else (r["lo"] <= value <= r["hi"])
print(json.dumps(r))
EOF
  python3 - "$rows" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
unit = "IOPS" if r["metric"] == "iops" else "MB/s"
rng = "-" if r["lo"] is None else f"{r['lo']:g}-{r['hi']:g}"
res = "INFO" if r["pass"] is None else ("PASS" if r["pass"] else "FAIL")
c = r["cpu_us_per_request"]
print(f"{r['class']:<5} {r['row']:<24} {r['value']:12.1f} {unit:<8} {rng:<20} {r['source']:<9} "
      f"{r['lat_mean_us']:9.0f} {c['model']:9.2f} {c['process']:10.1f}  {res}")
EOF
  if python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[-1]); sys.exit(0 if r["pass"] is not False else 1)' "$rows"; then
    :
  else
    failed=1
  fi
}

declare -A devs
# Each class's disk is attached at the first of its rows that runs.
declare -A profile_of=([hdd]=hdd [ssd]=ssd [raw]=raw [floor]=fuse-none)
device_for() {
  [[ -n ${devs[$1]:-} ]] && return 0
  devs[$1]=$(devclass_attach "$work" "$1" "${profile_of[$1]}" "$SIZE")
}
detach_class() {
  devclass_detach_all "$work" || exit 1
  unset "devs[$1]"
}

# ---- hdd ----
run_row hdd hdd "4k randread QD1" randread 4k 1 iops 100 150 class
run_row hdd hdd "4k randread QD16" randread 4k 16 iops 250 350 class
run_row hdd hdd "4k randwrite QD1 fsync=1" randwrite 4k 1 iops 70 150 derived --fsync=1
run_row hdd hdd "4k randwrite QD1" randwrite 4k 1 iops 200 600 derived
run_row hdd hdd "64k write QD16" write 64k 16 mbps 190 250 class
run_row hdd hdd "1M read QD4" read 1M 4 mbps 150 250 class
run_row hdd hdd "1M write QD4" write 1M 4 mbps 150 250 class
detach_class hdd

# ---- ssd ----
run_row ssd ssd "4k randread QD1" randread 4k 1 iops 10000 12500 class
run_row ssd ssd "4k randread QD16" randread 4k 16 iops 40000 100000 DC600M
run_row ssd ssd "4M read QD2" read 4M 2 mbps 450 560 DC600M
run_row ssd ssd "4M write QD2" write 4M 2 mbps 430 530 DC600M
detach_class ssd

# ---- raw: a sparse image on a direct-I/O loop device, no model (the SSD
# class of the store comparisons, qa/ceph/hybrid-hardware.sh): this VM's disk
# as it is, measured so that every report shows what the "SSD" was ----
raw_row() {
  local row=$1 rw=$2 bs=$3 qd=$4 metric=$5
  shift 5
  [[ "raw/$row" =~ $ROWS ]] || return 0
  device_for raw || exit 1
  fio --name=row --filename="${devs[raw]}" --ioengine=libaio --direct=1 --rw="$rw" --bs="$bs" --iodepth="$qd" \
    --time_based --runtime="$RUNTIME" --ramp_time="$RAMP" --randseed=4242 --output-format=json "$@" \
    >"$work/fio.json" 2>"$work/fio.err" || { echo "fio failed for raw/$row"; failed=1; return 1; }
  python3 - "$work/fio.json" "$row" "$rw" "$bs" "$qd" "$metric" <<'PY' >>"$rows"
import json, sys
path, row, rw, bs, qd, metric = sys.argv[1:]
side = json.load(open(path))["jobs"][0]["write" if "write" in rw else "read"]
value = side["iops"] if metric == "iops" else side["bw_bytes"] / 1e6
print(json.dumps({"class": "raw", "row": row, "rw": rw, "bs": bs, "iodepth": int(qd), "fio_extra": "",
                  "metric": metric, "value": value, "lo": None, "hi": None, "source": "-",
                  "lat_mean_us": side["clat_ns"]["mean"] / 1e3, "requests": 0,
                  "cpu_us_per_request": {"model": 0, "fuse_handlers": 0, "actuator_thread": 0, "process": 0},
                  "handback_late_mean_us": None, "model_busy_share": None, "max_request_bytes": None,
                  "pass": None}))
PY
  python3 - "$rows" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
unit = "IOPS" if r["metric"] == "iops" else "MB/s"
print(f"{'raw':<5} {r['row']:<24} {r['value']:12.1f} {unit:<8} {'-':<20} {'-':<9} {r['lat_mean_us']:9.0f} {'-':>9} {'-':>10}  INFO")
PY
}
raw_row "4k randread QD1" randread 4k 1 iops
raw_row "4k randread QD16" randread 4k 16 iops
raw_row "4k randwrite QD1 fsync=1" randwrite 4k 1 iops --fsync=1
raw_row "4M read QD2" read 4M 2 mbps
raw_row "4M write QD2" write 4M 2 mbps
detach_class raw

# ---- the FUSE path with no delay: the floor under every figure above ----
run_row none floor "4k randread QD1 (floor)" randread 4k 1 iops "" "" "-"
run_row none floor "4k randread QD16 (floor)" randread 4k 16 iops "" "" "-"
detach_class floor

# ---- data: exactly what went through the hdd device is in the image ----
echo
data_ok=1
data_notes=()
if [[ "data/check" =~ $ROWS ]]; then
  d=$work/data
  mkdir -p "$d"
  dev=$(devclass_attach "$d" disk hdd 4G) || exit 1
  head -c $((64 << 20)) /dev/urandom >"$work/pattern.bin"
  head -c $((1 << 20)) /dev/urandom >"$work/pattern-512.bin"
  # 1 MiB requests at 1 GiB; 512-byte requests at an odd sector (not 4 KiB-aligned:
  # the model's buffered path); random 4 KiB writes at QD16 through the write
  # cache, verified through the device by fio.
  dd if="$work/pattern.bin" of="$dev" bs=1M seek=1024 oflag=direct conv=fsync status=none || data_ok=0
  dd if="$work/pattern-512.bin" of="$dev" bs=512 seek=$((3 * 2097152 + 7)) oflag=direct conv=fsync status=none || data_ok=0
  fio_data=(--name=data --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=16 --offset=2G --size=128M
    --io_size=8M --randseed=777 --verify=crc32c --verify_fatal=1 --verify_state_save=0)
  if ! fio "${fio_data[@]}" --filename="$dev" --do_verify=1 >"$work/fio-data.log" 2>&1; then
    data_ok=0
    data_notes+=("fio write+verify through the device failed: $(grep -m1 -i 'verify\|err' "$work/fio-data.log")")
  fi
  blockdev --flushbufs "$dev" 2>/dev/null
  devclass_stats "$d" disk && cp "$d/disk.stats.json" "$work/data.stats.json"
  devclass_detach_all "$d" --keep-images || {
    data_ok=0
    data_notes+=("detach failed")
  }
  img=$d/disk.img
  if [[ $(stat -c %s "$img") != $((4 << 30)) ]]; then
    data_ok=0
    data_notes+=("image size changed")
  fi
  cmp -n $((64 << 20)) "$work/pattern.bin" <(dd if="$img" bs=1M skip=1024 count=64 status=none) ||
    { data_ok=0; data_notes+=("1 MiB pattern differs in the image"); }
  cmp -n $((1 << 20)) "$work/pattern-512.bin" <(dd if="$img" bs=512 skip=$((3 * 2097152 + 7)) count=2048 status=none) ||
    { data_ok=0; data_notes+=("512-byte pattern differs in the image"); }
  if ! fio "${fio_data[@]}" --filename="$img" --verify_only >"$work/fio-verify.log" 2>&1; then
    data_ok=0
    data_notes+=("fio verify_only on the image failed: $(grep -m1 -i 'verify\|err' "$work/fio-verify.log")")
  fi
  rm -f "$img"
  if ((data_ok)); then
    echo "data: PASS (64 MiB in 1 MiB requests, 1 MiB in 512 B requests at an odd sector, 8 MiB of random"
    echo "      4 KiB writes at QD16 verified through the device; after detach the image holds all of it)"
  else
    echo "data: FAIL: ${data_notes[*]}"
    failed=1
  fi
fi

# ---- power cuts: an hdd model with its undo log (DEVCLASS_POWERCUT=1) ----
CUT_SEED=${CHECK_CUT_SEED:-20261201}
pc=$work/powercut
blk_a=$((16 << 20)) blk_b=$((32 << 20)) span=$((64 << 10))
# Bytes of the image at OFF, LEN long, as hex per 4 KiB block.
blocks_of() { dd if="$1" bs=4096 skip=$(($2 / 4096)) count=$(($3 / 4096)) status=none | od -An -v -tx1 -w4096 | tr -d ' '; }
# pc_model KEEP: writes old data at A and B and flushes, new data at A and
# flushes, new data at B without a flush, cuts with KEEP; leaves the image
# in $pc/disk.img (detached) and the patterns in $work/pc-*.bin.
pc_model() {
  local keep=$1 dev
  mkdir -p "$pc"
  dev=$(DEVCLASS_POWERCUT=1 devclass_attach "$pc" disk hdd 1G) || return 1
  head -c "$span" /dev/urandom >"$work/pc-old.bin"
  head -c "$span" /dev/urandom >"$work/pc-new-a.bin"
  head -c "$span" /dev/urandom >"$work/pc-new-b.bin"
  # conv=fsync: the block device's fsync, which the loop device sends the
  # model as a flush (the FUSE fsync of `disk`).
  dd if="$work/pc-old.bin" of="$dev" bs=64k seek=$((blk_a / span)) oflag=direct conv=fsync status=none &&
    dd if="$work/pc-old.bin" of="$dev" bs=64k seek=$((blk_b / span)) oflag=direct conv=fsync status=none &&
    dd if="$work/pc-new-a.bin" of="$dev" bs=64k seek=$((blk_a / span)) oflag=direct conv=fsync status=none &&
    dd if="$work/pc-new-b.bin" of="$dev" bs=64k seek=$((blk_b / span)) oflag=direct status=none || return 1
  devclass_stats "$pc" disk && python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["fs"]["powercut"]; print("      before the cut: %d unflushed write(s), undo file %d bytes" % (p["live_writes"], p["file_bytes"]))' "$pc/disk.stats.json"
  devclass_powercut "$pc" --seed "$CUT_SEED" --keep "$keep" | sed 's/^/      /' || return 1
  # From the cut on the device fails every request.
  if dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null; then
    pc_notes+=("a read after the cut succeeded")
  fi
  devclass_detach_all "$pc" --keep-images || return 1
}

if [[ "powercut/fua" =~ $ROWS ]]; then
  # The loop driver announces a write cache and no FUA; the block layer then
  # sends a FUA write as the write and a flush after it, and the undo log
  # relies on that (disk_fs.cc, on_fsync). O_DSYNC on the block device makes
  # a FUA write followed by an fsync: two flushes when FUA became one.
  mkdir -p "$pc"
  if dev=$(DEVCLASS_POWERCUT=1 devclass_attach "$pc" disk hdd 1G); then
    q=/sys/block/${dev#/dev/}/queue
    fua=$(cat "$q/fua" 2>/dev/null) wc=$(cat "$q/write_cache" 2>/dev/null)
    devclass_stats "$pc" disk && cp "$pc/disk.stats.json" "$work/pc-before.json"
    dd if=/dev/urandom of="$dev" bs=4k count=1 oflag=direct,dsync status=none
    devclass_stats "$pc" disk
    read -r dw df < <(python3 -c 'import json,sys; a,b=(json.load(open(p))["fs"] for p in sys.argv[1:]); print(b["writes"]-a["writes"], b["fsyncs"]-a["fsyncs"])' "$work/pc-before.json" "$pc/disk.stats.json")
    devclass_detach_all "$pc" || failed=1
    if [[ $fua == 0 && $wc == "write back" && $dw -ge 1 && $df -ge 2 ]]; then
      echo "powercut fua: PASS (queue/fua $fua, write_cache '$wc'; a 4 KiB O_DIRECT|O_DSYNC write reached the model as $dw write(s) and $df flushes)"
    else
      echo "powercut fua: FAIL (queue/fua '$fua', write_cache '$wc'; the O_DSYNC write reached the model as $dw write(s) and $df flush(es); expected fua 0, write back, 1 write, 2 flushes)"
      failed=1
    fi
  else
    echo "powercut fua: FAIL (attach failed)"
    failed=1
  fi
fi

if [[ "powercut/keep-none" =~ $ROWS ]]; then
  pc_notes=()
  if pc_model none; then
    cmp -s "$work/pc-new-a.bin" <(dd if="$pc/disk.img" bs=64k skip=$((blk_a / span)) count=1 status=none) ||
      pc_notes+=("the flushed block A did not survive")
    cmp -s "$work/pc-old.bin" <(dd if="$pc/disk.img" bs=64k skip=$((blk_b / span)) count=1 status=none) ||
      pc_notes+=("the unflushed block B is not back to its old data")
  else
    pc_notes+=("the run failed")
  fi
  devclass_detach_all "$pc" >/dev/null 2>&1
  rm -f "$pc/disk.img"
  if ((${#pc_notes[@]} == 0)); then
    echo "powercut keep-none: PASS (seed $CUT_SEED; 64 KiB written and flushed survives, 64 KiB written after it without a flush reads back as its old data, reads fail after the cut)"
  else
    echo "powercut keep-none: FAIL (seed $CUT_SEED): ${pc_notes[*]}"
    failed=1
  fi
fi

if [[ "powercut/keep-random" =~ $ROWS ]]; then
  pc_notes=()
  kept=0 lost=0
  if pc_model random; then
    cmp -s "$work/pc-new-a.bin" <(dd if="$pc/disk.img" bs=64k skip=$((blk_a / span)) count=1 status=none) ||
      pc_notes+=("the flushed block A did not survive")
    mapfile -t got < <(blocks_of "$pc/disk.img" "$blk_b" "$span")
    mapfile -t old < <(blocks_of "$work/pc-old.bin" 0 "$span")
    mapfile -t new < <(blocks_of "$work/pc-new-b.bin" 0 "$span")
    for i in "${!got[@]}"; do
      if [[ ${got[$i]} == "${new[$i]}" ]]; then
        kept=$((kept + 1))
      elif [[ ${got[$i]} == "${old[$i]}" ]]; then
        lost=$((lost + 1))
      else
        pc_notes+=("block $i of B is neither its old nor its new data")
      fi
    done
    ((kept + lost == span / 4096)) || pc_notes+=("B has $((kept + lost)) whole blocks of $((span / 4096))")
  else
    pc_notes+=("the run failed")
  fi
  devclass_detach_all "$pc" >/dev/null 2>&1
  rm -f "$pc/disk.img"
  if ((${#pc_notes[@]} == 0)); then
    echo "powercut keep-random: PASS (seed $CUT_SEED; the flushed 64 KiB survives; of the unflushed 64 KiB, $kept 4 KiB blocks kept and $lost back to their old data, none torn)"
  else
    echo "powercut keep-random: FAIL (seed $CUT_SEED): ${pc_notes[*]}"
    failed=1
  fi
fi

python3 - "$rows" "$OUT" "$data_ok" "$(devclass_tool)" "$RUNTIME" "$RAMP" "$SIZE" "${data_notes[*]:-}" <<'EOF'
import json, os, platform, sys, time
rows_path, out, data_ok, tool, runtime, ramp, size, notes = sys.argv[1:]
rows = [json.loads(l) for l in open(rows_path) if l.strip()]
ranged = [r for r in rows if r["pass"] is not None]
model_cpu = [r["cpu_us_per_request"]["model"] for r in rows if r["requests"]]
report = {
    "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    "host": {"kernel": platform.release(), "cpus": os.cpu_count(), "loadavg": open("/proc/loadavg").read().split()[:3]},
    "tool": tool, "runtime_s": int(runtime), "ramp_s": int(ramp), "image_size": size,
    "rows": rows,
    "data_check": {"pass": data_ok == "1", "notes": notes},
    "summary": {
        "rows_pass": sum(1 for r in ranged if r["pass"]),
        "rows_fail": sum(1 for r in ranged if not r["pass"]),
        "model_cpu_us_per_request_max": max(model_cpu) if model_cpu else None,
    },
}
json.dump(report, open(out, "w"), indent=2)
s = report["summary"]
cpu = s["model_cpu_us_per_request_max"]
print(f"\n{s['rows_pass']} rows PASS, {s['rows_fail']} FAIL; the model's own CPU per request is at most "
      f"{'-' if cpu is None else f'{cpu:.2f}'} us; report in {out}")
EOF
echo "sources: class = the figures of the device class (qa/devclass/profiles.conf, [class]); DC600M = Kingston DC600M datasheet;"
echo "         derived = from the model's own reasoning (qa/devclass/profiles.conf), not a datasheet"
exit $failed
