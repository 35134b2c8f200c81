#!/usr/bin/env bash
# Silent corruption under a live OSD, found and repaired (issue 36, part 3):
# bytes flipped on an OSD's devices while it is stopped, beneath the store,
# as a failing disk would. BlueStore of the same ceph-osd is the control.
#
#   CEPH_BUILD=DIR qa/ceph/corruption.sh [hybridstore|bluestore|both] [OUTDIR]
#
# For each store (default both): Debian's ceph-mon and ceph-mgr, cephx, three
# OSDs of $CEPH_BUILD/bin/ceph-osd on file devices (hybridstore: block.ssd
# and block.hdd; BlueStore: one block file), a replicated pool of size 3,
# min_size 2, `noout` set. Objects whose primary is osd.0, with the
# deterministic content of make_payload (every 4 KiB block a distinct 32-byte
# hash repeated), of two kinds:
#   ssd   256 KiB: below hybridstore_placement_hdd_threshold, on the SSD
#         sections (the run checks the block was found in block.ssd);
#   hdd   4 MiB: on the HDD (found in block.hdd);
# two of each: one to be read, one to be deep-scrubbed. osd.0 is stopped
# (SIGTERM), and in each object's second 4 KiB block, wherever the device
# files hold it, one byte is inverted; osd.0 is started again. Then:
#   read    `rados get` of the read objects returns the bytes written (the
#           primary's store answers EIO and the OSD repairs from a replica);
#   scrub   `ceph pg deep-scrub` of the scrub objects' PGs marks them
#           inconsistent and lists the object with an error on osd.0's shard;
#   repair  `ceph pg repair` clears it; the next deep scrub is clean; the
#           object reads back as written.
# And, for hybridstore only, made with `hybridstore kv location = directory`
# (BlueStore keeps RocksDB inside its block device, in BlueFS, and so does
# hybridstore by default, in its kvfs: no file to corrupt here): RocksDB
# corruption. osd.0 is
# stopped, the last 4 KiB of its largest SST file (the table's index, meta
# index and footer) inverted, and the OSD must refuse to start, its log naming
# the store and the corruption, and `hybridstore-tool fsck` must fail saying
# what is wrong. The bytes are put back, the OSD starts, every object written
# reads back as written, and a deep scrub of the pool is clean.
# Every OSD log is checked for crash lines at the end.
#
# OUTDIR (default ./corruption-<date>) gets REPORT.md (also printed),
# results.tsv and every daemon's log. Exit 0: every check passed; 1: a
# failure; 77: SKIPPED (no CEPH_BUILD, missing tools).
# Environment: HS_SSD_SIZE/HS_HDD_SIZE (1G/8G), HS_TIMEOUT (300), HS_KEEP=1
# keeps the cluster directory.
set -u

which=${1:-both}
case $which in
both) stores="hybridstore bluestore" ;;
hybridstore | bluestore) stores=$which ;;
-h | --help) ;;  # common.sh prints the header
*) echo "usage: CEPH_BUILD=DIR $0 [hybridstore|bluestore|both] [OUTDIR]" >&2; exit 2 ;;
esac
out=${2:-$PWD/corruption-$(date +%Y%m%d-%H%M%S)}

export HS_TIMEOUT=${HS_TIMEOUT:-300} HS_SSD_SIZE=${HS_SSD_SIZE:-1G} HS_HDD_SIZE=${HS_HDD_SIZE:-8G}
# shellcheck source=SCRIPTDIR/common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source=SCRIPTDIR/../standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"

require_ceph_build ceph-osd
export CEPH_OSD=$CEPH_BUILD/bin/ceph-osd
case " $stores " in
*" hybridstore "*)
    osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore"
    tool=${HYBRIDSTORE_TOOL:-}
    [ -z "$tool" ] && [ -x "$HS_TOP/build/bin/hybridstore-tool" ] && tool=$HS_TOP/build/bin/hybridstore-tool
    if [ -z "$tool" ] || [ ! -x "$tool" ]; then skip "hybridstore-tool not found (make build, or HYBRIDSTORE_TOOL=...)"; fi ;;
esac
for b in ceph-mon ceph-mgr ceph rados ceph-authtool monmaptool uuidgen jq timeout python3; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps)"
done
export HS_DEVICES=file HS_AUTH=cephx

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
results=$out/results.tsv
printf 'store\tcheck\tobject\tresult\tdetail\n' > "$results"
dir=
store=
failed=
release=$(ceph_build_release)
POOL=corrupt

record() {
    printf '%s\t%s\t%s\t%s\t%s\n' "$store" "$1" "$2" "$3" "$4" >> "$results"
    log "$store: $1 ${2:+$2 }$3${4:+ ($4)}"
    [ "$3" = passed ] || [ "$3" = n/a ] || failed=1
}

save_logs() {
    [ -n "$dir" ] && [ -d "$dir" ] && [ -n "$store" ] || return 0
    mkdir -p "$out/$store"
    local f
    for f in "$dir"/*.log "$dir"/ceph.conf "$dir"/fsck-*; do [ -f "$f" ] && cp "$f" "$out/$store/"; done
}

cleanup() {
    if [ -n "$dir" ] && [ -d "$dir" ]; then
        kill_daemons "$dir" TERM
        sleep 1
        kill_daemons "$dir" KILL
        save_logs
        teardown "$dir"
    fi
    dir=
}
exec 9>&2
trap 'cleanup 2>&9' EXIT
trap 'log "interrupted: tearing down" 2>&9; exit 130' INT TERM

q() { HS_CMD_TIMEOUT=${HS_CMD_TIMEOUT:-60} ceph_cli "$@"; }

# object_on_osd0 KIND ROLE [NOT_PG]: the first name KIND-ROLE-N whose primary
# is osd.0 (and whose PG is not NOT_PG).
object_on_osd0() {
    local i name j
    for ((i = 1; i < 200; i++)); do
        name=$1-$2-$i
        j=$(HS_CMD_TIMEOUT=20 q osd map "$POOL" "$name" -f json) || return 1
        [ "$(echo "$j" | jq -r '.acting_primary')" = 0 ] || continue
        [ -n "${3:-}" ] && [ "$(echo "$j" | jq -r '.pgid')" = "$3" ] && continue
        echo "$name"
        return 0
    done
    return 1
}

pg_of() { q osd map "$POOL" "$1" -f json | jq -r '.pgid'; }

# flip_block FILES... -- HEXPATTERN: inverts one byte in the middle of every
# 4 KiB-aligned block of FILES equal to the pattern (32 bytes repeated to
# 4 KiB); prints "file:offset" per block. Reads only the files' data (SEEK_DATA).
flip_block() {
    python3 - "$@" << 'EOF'
import os, sys
args = sys.argv[1:]
sep = args.index("--")
files, pattern = args[:sep], bytes.fromhex(args[sep + 1]) * 128
found = 0
for path in files:
    fd = os.open(path, os.O_RDWR)
    size = os.fstat(fd).st_size
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        start -= start % 4096
        off = start
        while off < end:
            chunk = os.pread(fd, min(8 << 20, end - off), off)
            i = chunk.find(pattern)
            while i >= 0:
                if (off + i) % 4096 == 0:
                    b = chunk[i + 2048] ^ 0xFF
                    os.pwrite(fd, bytes([b]), off + i + 2048)
                    print(f"{path}:{off + i}")
                    found += 1
                i = chunk.find(pattern, i + 1)
            if len(chunk) < 4096:
                break
            off += len(chunk) - (len(chunk) % 4096)
        pos = end
    os.fsync(fd)
    os.close(fd)
sys.exit(0 if found else 3)
EOF
}

# block_hash NAME INDEX: the 32-byte hash make_payload repeats in 4 KiB block INDEX.
block_hash() {
    python3 -c '
import hashlib, sys
b = hashlib.sha256(sys.argv[1].encode()).digest()
for _ in range(int(sys.argv[2]) + 1):
    b = hashlib.sha256(b).digest()
print(b.hex())' "$1" "$2"
}

device_files() {
    local d=$dir/osd.0
    if [ "$store" = hybridstore ]; then
        echo "$d/block.ssd"
        echo "$d/block.hdd"
    else
        echo "$d/block"
    fi
}

deep_scrub_pg() {
    local pg=$1 before start=$SECONDS asked=$SECONDS j
    before=$(q pg "$pg" query -f json | jq -r '.info.stats.last_deep_scrub_stamp') || return 1
    q pg deep-scrub "$pg" > /dev/null || return 1
    while :; do
        j=$(q pg "$pg" query -f json) || return 1
        if [ "$(echo "$j" | jq -r '.info.stats.last_deep_scrub_stamp')" != "$before" ] &&
            ! echo "$j" | jq -r '.state' | grep -q scrubbing; then
            return 0
        fi
        ((SECONDS - start > HS_TIMEOUT)) && { fail "deep-scrub of $pg did not finish in ${HS_TIMEOUT}s"; return 1; }
        # A request the OSD declined (recovery still running) is asked again.
        if ((SECONDS - asked >= 60)); then
            q pg deep-scrub "$pg" > /dev/null
            asked=$SECONDS
        fi
        sleep 2
    done
}

pg_state() { q pg "$1" query -f json | jq -r '.state'; }

# pg_repaired PG: the PG's state is known and neither inconsistent nor repairing.
pg_repaired() {
    local st
    st=$(pg_state "$1") && [ -n "$st" ] && ! grep -q -E 'inconsistent|repair' <<< "$st"
}

# ---------------------------------------------------------------- one store

run_store() {
    store=$1
    export HS_OBJECTSTORE=$store
    # No "corrupt" in the path: the checks below grep logs for the word.
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hs-flip-$store.XXXXXX")
    dir=$(readlink -f "$dir")
    CEPH_MON=127.0.0.1:$(pick_mon_port 18900) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    # RocksDB in the data directory (not the default, which puts it in the
    # kvfs on the SSD): the SST case below corrupts a table file there.
    [ "$store" = hybridstore ] && conf_set "$dir" osd "hybridstore kv location" directory
    conf_render "$dir"
    log "=== $store: $release, 3 OSDs (file devices), pool $POOL size 3 min_size 2"
    run_cluster "$dir" 3 || { fail "$store: cluster did not start"; return 1; }
    q osd set noout > /dev/null 2>&1
    q osd pool create "$POOL" 16 16 replicated > /dev/null || return 1
    q osd pool set "$POOL" size 3 > /dev/null || return 1
    q osd pool set "$POOL" min_size 2 > /dev/null || return 1
    q osd pool application enable "$POOL" rados > /dev/null || return 1
    wait_for_clean "$HS_TIMEOUT" || return 1

    local -A size=([ssd]=262144 [hdd]=4194304) obj
    local kind role name all=()
    for kind in ssd hdd; do
        for role in read scrub; do
            # The two scrub objects in different PGs: one PG's repair would fix both.
            local not_pg=
            [ "$kind-$role" = hdd-scrub ] && not_pg=$(pg_of "${obj[ssd-scrub]}")
            name=$(object_on_osd0 "$kind" "$role" "$not_pg") || { fail "no object name maps to osd.0"; return 1; }
            obj[$kind-$role]=$name
            make_payload "$name" "${size[$kind]}" "$dir/payload" || return 1
            rados_cli -p "$POOL" put "$name" "$dir/payload" || { fail "rados put $name"; return 1; }
            all+=("$name")
        done
    done
    # Filler objects, so that osd.0 holds more than the four (and RocksDB an SST).
    local i
    for ((i = 0; i < 40; i++)); do
        make_payload "filler-$i" $(((i % 4 + 1) * 65536)) "$dir/payload" || return 1
        rados_cli -p "$POOL" put "filler-$i" "$dir/payload" || { fail "rados put filler-$i"; return 1; }
        all+=("filler-$i")
    done
    wait_for_clean "$HS_TIMEOUT" || return 1

    # ---- data corruption beneath the store
    stop_osd "$dir" 0 TERM || return 1
    wait_until "$HS_TIMEOUT" "osd.0 down" osd_is_down 0 || return 1
    local files where
    mapfile -t files < <(device_files)
    for kind in ssd hdd; do
        for role in read scrub; do
            name=${obj[$kind-$role]}
            where=$(flip_block "${files[@]}" -- "$(block_hash "$name" 1)")
            if [ -z "$where" ]; then
                record corrupt "$name" FAILED "its second block was not found on osd.0's devices"
                continue
            fi
            # hybridstore: on the tier its size puts it, and only there.
            local tier_ok=passed other=block.hdd
            [ "$kind" = hdd ] && other=block.ssd
            if [ "$store" = hybridstore ] && { ! grep -q -F "/block.$kind:" <<< "$where" || grep -q -F "/$other:" <<< "$where"; }; then
                tier_ok=FAILED
            fi
            record corrupt "$name" "$tier_ok" "flipped $(tr '\n' ' ' <<< "${where//"$dir/osd.0/"/}")"
        done
    done
    activate_osd "$dir" 0 || { record restart osd.0 FAILED "did not start after the data corruption"; return 1; }
    wait_for_clean "$HS_TIMEOUT" || return 1

    # read: the replica's bytes, never the flipped ones.
    local eio_before
    for kind in ssd hdd; do
        name=${obj[$kind-read]}
        make_payload "$name" "${size[$kind]}" "$dir/want" || return 1
        if ! rados_cli -p "$POOL" get "$name" "$dir/got" 2> "$dir/get.err"; then
            record read "$name" FAILED "rados get: $(tr '\n' ' ' < "$dir/get.err")"
        elif ! cmp -s "$dir/want" "$dir/got"; then
            record read "$name" FAILED "WRONG BYTES served"
        else
            record read "$name" passed "the bytes written"
        fi
    done
    if [ "$store" = hybridstore ]; then
        eio_before=$(perf_dump 0 | jq '.hybridstore.read_eio // 0' 2> /dev/null)
        eio_before=${eio_before:-0}
        record read-eio osd.0 "$([ "$eio_before" -ge 2 ] && echo passed || echo FAILED)" \
            "the store answered EIO $eio_before times (perf read_eio)"
    fi
    # The read repairs recover: a deep scrub asked for meanwhile is declined.
    wait_for_clean "$HS_TIMEOUT" || return 1

    # scrub and repair.
    local pg listed st
    for kind in ssd hdd; do
        name=${obj[$kind-scrub]}
        pg=$(pg_of "$name")
        deep_scrub_pg "$pg" || { record deep-scrub "$name" FAILED "pg $pg"; continue; }
        st=$(pg_state "$pg")
        listed=$(rados_cli list-inconsistent-obj "$pg" --format=json 2> /dev/null |
            jq -r --arg n "$name" '[.inconsistents[]? | select(.object.name == $n) | .shards[]? | select(.osd == 0) | .errors[]?] | unique | join(",")')
        if echo "$st" | grep -q inconsistent && [ -n "$listed" ]; then
            record deep-scrub "$name" passed "pg $pg $st; osd.0 shard: $listed"
        else
            record deep-scrub "$name" FAILED "pg $pg $st; osd.0 shard errors: '${listed}'"
        fi
        q pg repair "$pg" > /dev/null || { record repair "$name" FAILED "ceph pg repair $pg"; continue; }
        wait_until "$HS_TIMEOUT" "pg $pg repaired" pg_repaired "$pg" ||
            { record repair "$name" FAILED "pg $pg still $(pg_state "$pg")"; continue; }
        deep_scrub_pg "$pg" || { record repair "$name" FAILED "deep-scrub after repair"; continue; }
        st=$(pg_state "$pg")
        make_payload "$name" "${size[$kind]}" "$dir/want" || return 1
        rados_cli -p "$POOL" get "$name" "$dir/got" 2> /dev/null
        if [ "$st" = active+clean ] && cmp -s "$dir/want" "$dir/got"; then
            record repair "$name" passed "pg $pg active+clean after repair and a new deep scrub; reads as written"
        else
            record repair "$name" FAILED "pg $pg $st after repair; bytes $(cmp -s "$dir/want" "$dir/got" && echo ok || echo WRONG)"
        fi
    done

    # ---- RocksDB corruption (hybridstore: its RocksDB is a directory of files)
    if [ "$store" = hybridstore ]; then
        # Everything in SST files, none left only in the log.
        q tell osd.0 compact > /dev/null 2>&1 || log "ceph tell osd.0 compact failed"
        stop_osd "$dir" 0 TERM || return 1
        wait_until "$HS_TIMEOUT" "osd.0 down" osd_is_down 0 || return 1
        local sst
        sst=$(find "$dir/osd.0/db" -name '*.sst' -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
        if [ -z "$sst" ]; then
            record rocksdb-sst osd.0 FAILED "no SST file in osd.0/db"
        else
            local sz n=4096
            sz=$(stat -c %s "$sst")
            ((sz < n)) && n=$sz
            cp "$sst" "$dir/sst.saved"
            python3 -c '
import os, sys
p, n = sys.argv[1], int(sys.argv[2])
fd = os.open(p, os.O_RDWR)
sz = os.fstat(fd).st_size
b = bytes(x ^ 0xFF for x in os.pread(fd, n, sz - n))
os.pwrite(fd, b, sz - n)
os.fsync(fd)' "$sst" "$n"
            local started=no args=() logoff
            logoff=$(stat -c %s "$dir/osd.0.log")
            [ -s "$dir/osd.0/hs.args" ] && read -r -a args < "$dir/osd.0/hs.args"
            # ceph-osd's parent waits for the store to mount: bounded.
            timeout 120 "$CEPH_OSD" -c "$dir/ceph.conf" -i 0 "${args[@]}" > /dev/null 2>&1 && sleep 15 &&
                daemon_pid "$dir" osd.0 > /dev/null && started=yes
            local msg
            msg=$(tail -c +$((logoff + 1)) "$dir/osd.0.log" | sed "s|$dir/||g" |
                grep -a -E 'mount failed' | grep -a -m1 -E 'Corruption|corrupt|magic|checksum' | tail -c 400)
            if [ "$started" = no ] && [ -n "$msg" ]; then
                record rocksdb-sst osd.0 passed "refused to start: $msg"
            else
                record rocksdb-sst osd.0 FAILED "started=$started; log: ${msg:-no line naming the store and the corruption}"
                stop_osd "$dir" 0 KILL > /dev/null 2>&1
            fi
            timeout "$HS_TIMEOUT" "$tool" --path "$dir/osd.0" fsck > "$dir/fsck-corrupt.log" 2>&1
            local rc=$?
            sed -i "s|$dir/||g" "$dir/fsck-corrupt.log"
            if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q -E 'Corruption|checksum mismatch|magic' "$dir/fsck-corrupt.log"; then
                record fsck-sst osd.0 passed "exit $rc: $(grep -m1 -E 'Corruption|checksum mismatch|magic' "$dir/fsck-corrupt.log" | tail -c 300)"
            else
                record fsck-sst osd.0 FAILED "exit $rc: $(tail -2 "$dir/fsck-corrupt.log" | tr '\n' ' ')"
            fi
            cp "$dir/sst.saved" "$sst"
            activate_osd "$dir" 0 || { record restore osd.0 FAILED "did not start with the SST put back"; return 1; }
            wait_for_clean "$HS_TIMEOUT" || return 1
        fi
    else
        record rocksdb-sst osd.0 n/a "BlueStore keeps RocksDB in BlueFS inside its block device"
    fi

    # ---- the end: everything as written, the pool scrubs clean, no crash.
    local bad=0 want
    for name in "${all[@]}"; do
        case $name in ssd-*) want=${size[ssd]} ;; hdd-*) want=${size[hdd]} ;; filler-*) want=$(((${name#filler-} % 4 + 1) * 65536)) ;; esac
        check_object "$POOL" "$name" "$want" "$dir" 2> /dev/null || { bad=$((bad + 1)); log "$name differs"; }
    done
    record all-objects "${#all[@]}" "$([ $bad = 0 ] && echo passed || echo FAILED)" "$bad of ${#all[@]} differ"
    local incons=0 pgs=0
    for pg in $(q pg ls-by-pool "$POOL" -f json | jq -r '(.pg_stats // .)[].pgid'); do
        pgs=$((pgs + 1))
        deep_scrub_pg "$pg" || { incons=$((incons + 1)); continue; }
        pg_state "$pg" | grep -q inconsistent && incons=$((incons + 1))
    done
    record final-deep-scrub "$POOL" "$([ $incons = 0 ] && [ $pgs = 16 ] && echo passed || echo FAILED)" \
        "$pgs of 16 PGs deep-scrubbed, $incons inconsistent"
    local crashes
    crashes=$(osd_crash_lines "$dir" 3 5)
    record crashes osd.0-2 "$([ -z "$crashes" ] && echo passed || echo FAILED)" "${crashes:-none}"
    cleanup
}

for s in $stores; do
    run_store "$s" || { failed=1; record setup - FAILED "the run stopped early (see the log)"; cleanup; }
done

{
    echo "# Corruption beneath the store, found and repaired"
    echo
    echo "$release; $(date -u +%F). \`qa/ceph/corruption.sh\` (see its header)."
    echo
    echo "| store | check | object | result | detail |"
    echo "|---|---|---|---|---|"
    tail -n +2 "$results" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }'
} > "$out/REPORT.md"
cat "$out/REPORT.md"
[ -z "$failed" ] || exit 1
