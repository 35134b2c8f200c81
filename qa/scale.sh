#!/usr/bin/env bash
# Many small objects on one store (issue 57, `make scale`): a fill of
# SCALE_OBJECTS (10,000,000) objects of 512 B to 4 KiB, each with
# attributes and omap keys as an RGW index or CephFS metadata pool's objects
# carry, then the operations whose cost grows with the object count: a mount
# (`df`), a migration pass, fsck, random reads, and a remount. Wall time and
# peak RSS of each, and the create rate over the whole fill, plotted.
#
#   qa/scale.sh [BUILD] [OUTDIR]
#
# BUILD (default build) holds bin/hybridstore-bench and bin/hybridstore-tool;
# OUTDIR (default ./scale-<date>) gets REPORT.md (also printed), fill.json
# (the bench's per-second series), create-rate.png and each step's output.
# The store is made in SCALE_DIR (default OUTDIR/store) and removed at the
# end unless SCALE_KEEP=1.
#
# Environment: SCALE_OBJECTS (10000000), SCALE_MIX (512:25,1K:25,2K:25,4K:25),
# SCALE_XATTRS (2), SCALE_OMAP_KEYS (4), SCALE_SSD (40G), SCALE_HDD (16G)
# (sparse files, hybridstore_block_preallocate=none: 10M objects took
# 17.9 GiB of data and 8.1 GiB of RocksDB, on the SSD file),
# SCALE_READ_SECONDS (60), SCALE_SET (extra `--set key=value` words for every
# command, e.g. "--set hybridstore_memory_target=1G"), SCALE_SEED (1).
# The report ends with the issue's goals, each PASS or FAIL against this
# run's figures (mount <= 5 s, a pass <= 512 MB of RSS above the mount's
# (the pass's own memory: the process mounts the store first), fsck <= 120 s, the
# create rate at the end >= 80% of the start): measurements, not checks; a
# goal missed does not fail the run.
# Exit 0: every step ran; 1: a step failed; 2: bad usage.
set -u
case "${1:-}" in
-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
esac
build=${1:-build}
out=${2:-$PWD/scale-$(date +%Y%m%d-%H%M%S)}
SCALE_OBJECTS=${SCALE_OBJECTS:-10000000}
SCALE_MIX=${SCALE_MIX:-512:25,1K:25,2K:25,4K:25}
SCALE_XATTRS=${SCALE_XATTRS:-2}
SCALE_OMAP_KEYS=${SCALE_OMAP_KEYS:-4}
SCALE_SSD=${SCALE_SSD:-40G}
SCALE_HDD=${SCALE_HDD:-16G}
SCALE_READ_SECONDS=${SCALE_READ_SECONDS:-60}
SCALE_SEED=${SCALE_SEED:-1}
for v in SCALE_OBJECTS SCALE_READ_SECONDS SCALE_SEED; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v=${!v}: a positive integer" >&2; exit 2; }
done
B=$build/bin/hybridstore-bench
T=$build/bin/hybridstore-tool
for x in "$B" "$T"; do [ -x "$x" ] || { echo "$x is missing: make build first" >&2; exit 2; }; done
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
store=${SCALE_DIR:-$out/store}
[ -e "$store" ] && { echo "$store exists: give an empty SCALE_DIR" >&2; exit 2; }
# shellcheck disable=SC2206
sets=(--set "hybridstore_ssd_size=$SCALE_SSD" --set "hybridstore_hdd_size=$SCALE_HDD"
    --set hybridstore_block_preallocate=none ${SCALE_SET:-})
cleanup() { [ "${SCALE_KEEP:-}" = 1 ] || rm -rf "$store"; }
trap cleanup EXIT
log() { echo "$(date +%H:%M:%S) $*"; }

printf 'step\twall_s\tpeak_rss_mb\tnote\n' > "$out/steps.tsv"
# step NAME NOTE CMD...: runs CMD under /usr/bin/time -v, its output in
# NAME.out, and records its wall time and peak RSS.
step() {
    local name=$1 note=$2 rc
    shift 2
    log "$name: $*"
    /usr/bin/time -v -o "$out/$name.time" "$@" > "$out/$name.out" 2>&1
    rc=$?
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.1f", s }' "$out/$name.time")
    rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$out/$name.time")
    printf '%s\t%s\t%s\t%s\n' "$name" "$wall" "$rss" "$note" >> "$out/steps.tsv"
    log "$name: ${wall} s, peak RSS ${rss} MB (exit $rc)"
    [ "$rc" = 0 ] || { tail -5 "$out/$name.out" >&2; echo "FAILED: $name" >&2; exit 1; }
}

step fill "$SCALE_OBJECTS objects of $SCALE_MIX, $SCALE_XATTRS xattrs, $SCALE_OMAP_KEYS omap keys each" \
    "$B" write --object-mix "$SCALE_MIX" --xattrs "$SCALE_XATTRS" --omap-keys "$SCALE_OMAP_KEYS" \
    --max-objects "$SCALE_OBJECTS" --seconds 86400 -t 16 --raw-seconds 0 --no-cleanup --seed "$SCALE_SEED" \
    --path "$store" --json "$out/fill.json" "${sets[@]}"
step mount "hybridstore-tool df: a mount, the usage, an umount" "$T" --path "$store" "${sets[@]}" df
step migrate "hybridstore-tool migrate --now: one planning pass over every object" \
    "$T" --path "$store" "${sets[@]}" migrate --now
step fsck "hybridstore-tool fsck (shallow)" "$T" --path "$store" "${sets[@]}" fsck
step read "hybridstore-bench rand for $SCALE_READ_SECONDS s, every byte checked" \
    "$B" rand --seconds "$SCALE_READ_SECONDS" -t 16 --raw-seconds 0 --seed "$SCALE_SEED" --path "$store" "${sets[@]}"
step remount "hybridstore-tool df again" "$T" --path "$store" "${sets[@]}" df
grep -E '^(objects|rocksdb):' "$out/remount.out" > "$out/sizes.txt"

# Debian's python3, which has matplotlib (make deps), not one first on PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" - "$out" "$SCALE_OBJECTS" << 'EOF' > "$out/rate.txt"
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
j = json.load(open(out + "/fill.json"))
sec, fin = j["series"]["sec"], j["series"]["finished"]
def rate(a, b):
    pts = [(s, f) for s, f in zip(sec, fin) if a <= s <= b]
    return (pts[-1][1] - pts[0][1]) / max(1e-9, pts[-1][0] - pts[0][0]) if len(pts) > 1 else 0.0
end = sec[-1] if sec else 0
first, last = rate(0, 30), rate(max(0, end - 30), end)
print(f"create rate: first 30 s {first:,.0f} objects/s, last 30 s {last:,.0f} objects/s "
      f"({100 * last / first if first else 0:.0f}% of the start), {n:,} objects in {end:,} s")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    per = [b - a for a, b in zip([0] + fin[:-1], fin)]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(fin, per, linewidth=0.4, alpha=0.5, label="per second")
    w = 30
    avg = [sum(per[max(0, i - w + 1):i + 1]) / len(per[max(0, i - w + 1):i + 1]) for i in range(len(per))]
    ax.plot(fin, avg, linewidth=1.2, label=f"{w} s mean")
    ax.legend(loc="lower left")
    ax.set_xlabel("objects written")
    ax.set_ylabel("objects/s")
    ax.set_title("create rate over the fill")
    fig.tight_layout()
    fig.savefig(out + "/create-rate.png", dpi=110)
except ImportError:
    print("(no matplotlib: no plot)")
EOF

{
    echo "# Scale: $SCALE_OBJECTS objects ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs)"
    echo
    echo "Command: \`SCALE_OBJECTS=$SCALE_OBJECTS qa/scale.sh $build\`${SCALE_SET:+ with SCALE_SET=\"$SCALE_SET\"}"
    echo
    echo "| step | wall (s) | peak RSS (MB) | what |"
    echo "|---|---|---|---|"
    tail -n +2 "$out/steps.tsv" | awk -F '\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
    echo
    cat "$out/rate.txt" "$out/sizes.txt"
    echo
    awk -F '\t' -v rate="$(sed -n 's/.*(\([0-9]*\)% of the start).*/\1/p' "$out/rate.txt")" '
        function goal(what, ok) { printf "GOAL %s: %s\n", what, ok ? "PASS" : "FAIL" }
        $1 == "mount" { goal("mount <= 5 s (" $2 " s)", $2 <= 5) }
        $1 == "mount" { mount_rss = $3 }
        $1 == "migrate" { goal("migration pass <= 512 MB above the mount (" $3 - mount_rss " MB: peak " $3 " MB, the mount " mount_rss " MB)", $3 - mount_rss <= 512) }
        $1 == "fsck" { goal("fsck <= 120 s (" $2 " s)", $2 <= 120) }
        END { goal("create rate at the end >= 80% of the start (" rate "%)", rate >= 80) }' "$out/steps.tsv"
} > "$out/REPORT.md"
cat "$out/REPORT.md"
