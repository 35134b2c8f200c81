#!/usr/bin/env bash
# HybridStore against BlueStore through Ceph's own ObjectStore benchmark:
# fio with the objectstore engine (src/test/fio/fio_ceph_objectstore.cc),
# which drives an ObjectStore directly (no OSD, no network), both stores
# from the same Ceph build, on the same devices, with the same job files
# (qa/ceph/fio/*.fio; the stores' ceph.conf differ only in the store and
# its device paths: qa/ceph/fio/{bluestore,hybridstore}.conf).
#
#   CEPH_BUILD=DIR qa/ceph/objectstore-fio.sh [OUTDIR]
#   qa/ceph/objectstore-fio.sh --help
#
# DIR is a Ceph build with HybridStore linked in and the fio engine built
# (src/tools/ceph-integrate --fio GIT_DIR): DIR/bin/fio and
# DIR/lib/libfio_ceph_objectstore.so. Without them the script says SKIPPED
# and exits 77; it never reports a pass without having run.
#
# Every row runs on both stores, alternately (the order flips every repeat),
# HS_FIO_REPEATS times, each run on a fresh store and fresh devices. The
# table gives, for each store, the median of its repeats of IOPS, MB/s, p50
# and p99 completion latency and CPU per op (the fio process's user+sys time
# over the measured job's ops; fio and the store run in one process), and
# the ratio hybridstore/bluestore. OUTDIR (default
# ./objectstore-fio-<date>) gets REPORT.md, results.json,
# objectstore-fio.png and every run's fio output, CPU marks, perf dump and
# store log under runs/ROW/STORE-REP/.
#
# Rows (NAME: job file, block size, writes in flight per thread, threads):
#   rw4k-exist-qdQ-jJ-P   randwrite-existing.fio  4 KiB random writes into
#                         4 MiB objects written whole first (the RBD pattern)
#   rw4k-new-qdQ-jJ-P     randwrite-new.fio  every 4 KiB write creates an object
#   rr4k-jJ               randread.fio  4 KiB random reads (existing objects)
#   sw64k-P, sw4m-P       seqwrite.fio  64 KiB / 4 MiB sequential writes, 16 in flight
#   sr64k, sr4m           seqread.fio   64 KiB / 4 MiB sequential reads
# P is pglog (pglog_simulation on, with the object-info and snapset
# attributes, _fastinfo and the PG log omap entries an OSD writes with every
# write; the create rows without the two attributes, see randwrite-new.fio)
# or nopglog (the bare write). Reads have no pglog variant, and the engine
# reads synchronously: a read row's concurrency is its threads.
#   HS_FIO_MATRIX=default  11 rows: rw4k-exist qd1-j1 and qd16-j8, rw4k-new
#                          qd16-j8, each pglog and nopglog; rr4k-j8;
#                          sw64k-pglog, sw4m-pglog; sr64k, sr4m. About 30
#                          minutes with the defaults on 2 cores.
#   HS_FIO_MATRIX=full     32 rows: rw4k-exist and rw4k-new at qd 1, 16, 64
#                          with 1 and 8 threads, pglog and nopglog; rr4k-j1,
#                          rr4k-j8; sw64k, sw4m pglog and nopglog; sr64k, sr4m.
#   HS_FIO_ROWS=REGEX      only the rows of the matrix whose name matches
#
# Environment (defaults in brackets):
#   HS_FIO_REPEATS [3]       runs of each store per row
#   HS_FIO_RUNTIME [10]      seconds measured per run
#   HS_FIO_STORES ["bluestore hybridstore"]  the stores, in the first repeat's order
#   HS_FIO_DATASET [1G]      bytes of 4 MiB objects the existing-object, read and
#                            sequential rows use (split over the threads)
#   HS_FIO_NEW_OBJECTS [160000]  4 KiB objects the create rows may make (all threads)
#   HS_FIO_SSD_SIZE [8G], HS_FIO_HDD_SIZE [16G]  the devices (sparse)
#   HS_FIO_SSD_LAYOUT [zero] the SSD role's file (HS_FIO_DEVICES=file): zero
#                            (written with zeros before each run, as an SSD's
#                            blocks all exist) or sparse. On a sparse file a
#                            write into a hole takes ext4's inode lock
#                            exclusively and the next DSYNC write to the file
#                            commits the allocation, which a store keeping
#                            its RocksDB and journal on that device pays and
#                            one keeping them in the directory does not
#                            (docs/benchmarks.md). The HDD role stays sparse.
#   HS_FIO_DEVICES [file]    file (sparse files in the run directory) or loop
#                            (root: loop devices with direct I/O over sparse
#                            images, the HDD role rotational=1, the SSD role 0).
#                            Not loop by default: on loop devices BlueStore
#                            (16.2.11, libaio) stopped in about half of the
#                            fills of 8 threads (see fio/fill.fio); on files it
#                            did not. The run then fails after HS_FIO_TIMEOUT.
#   HS_FIO_CLASSES [0]       1: the HDD role served through the disk model
#                            (qa/devclass, the hdd profile), the SSD role a raw
#                            loop device; needs root, FUSE and
#                            hybridstore-diskmodel (HS_BUILD_DIR or build/bin)
#   HS_FIO_OI_ATTR_LEN [350] HS_FIO_SNAPSET_ATTR_LEN [35] HS_FIO_FASTINFO_LEN [186]
#   HS_FIO_PGLOG_LEN [173] HS_FIO_PGLOG_DUP_LEN [57]   the pglog rows' sizes
#   HS_FIO_TIMEOUT [2xRUNTIME+240]  seconds a run may take (mkfs, fill, the
#                            measured job, umount); then it counts as a hang:
#                            every thread's stack to hang-backtraces.txt (gdb),
#                            fio killed, the run failed
#   HS_FIO_HS_OPTIONS [""]   "name=value ..." engine options added to the
#                            hybridstore runs' conf (an A/B of one option in
#                            the same binary), e.g.
#                            hybridstore_extent_map_inline_max=0
#   HS_FIO_KEEP [0]          1: keep every run's devices and store (else only
#                            a failed run's)
# Exit: 0 all runs passed, 1 a run failed (the others still run; REPORT.md
# lists the failures with the store's log), 77 skipped.
set -u

# fio's exec_prerun/exec_postrun of the measured job: "objectstore-fio.sh
# --cpu-mark start|end" appends the fio process's user+sys clock ticks to
# $HS_FIO_DIR/cpu.marks. fio runs it through system(): the process named
# fio is found among the ancestors.
if [ "${1:-}" = --cpu-mark ]; then
    p=$PPID
    for _ in 1 2 3 4 5 6; do
        [ "$(cat "/proc/$p/comm" 2> /dev/null)" = fio ] && break
        p=$(awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$p/stat" 2> /dev/null)
        [ -n "$p" ] && [ "$p" -gt 1 ] || exit 0
    done
    [ "$(cat "/proc/$p/comm" 2> /dev/null)" = fio ] || exit 0
    stat=$(< "/proc/$p/stat")
    read -r -a f <<< "${stat##*) }"
    # After the command name: state is field 3, utime 14, stime 15.
    echo "$2 $EPOCHREALTIME $((f[11] + f[12]))" >> "$HS_FIO_DIR/cpu.marks"
    exit 0
fi

if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
    sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
fi

# shellcheck source=SCRIPTDIR/common.sh
source "$(dirname "$0")/common.sh"
log() { echo "$(date +%H:%M:%S) $*" >&2; }

HS_FIO_MATRIX=${HS_FIO_MATRIX:-default}
HS_FIO_ROWS=${HS_FIO_ROWS:-}
HS_FIO_REPEATS=${HS_FIO_REPEATS:-3}
# The job files read it from the environment.
export HS_FIO_RUNTIME=${HS_FIO_RUNTIME:-10}
HS_FIO_STORES=${HS_FIO_STORES:-bluestore hybridstore}
HS_FIO_DATASET=${HS_FIO_DATASET:-1G}
HS_FIO_NEW_OBJECTS=${HS_FIO_NEW_OBJECTS:-160000}
HS_FIO_SSD_SIZE=${HS_FIO_SSD_SIZE:-8G}
HS_FIO_HDD_SIZE=${HS_FIO_HDD_SIZE:-16G}
HS_FIO_DEVICES=${HS_FIO_DEVICES:-file}
HS_FIO_SSD_LAYOUT=${HS_FIO_SSD_LAYOUT:-zero}
HS_FIO_CLASSES=${HS_FIO_CLASSES:-0}
HS_FIO_KEEP=${HS_FIO_KEEP:-0}
HS_FIO_HS_OPTIONS=${HS_FIO_HS_OPTIONS:-}
HS_FIO_TIMEOUT=${HS_FIO_TIMEOUT:-$((2 * HS_FIO_RUNTIME + 240))}
pg_oi=${HS_FIO_OI_ATTR_LEN:-350}
pg_snapset=${HS_FIO_SNAPSET_ATTR_LEN:-35}
pg_fastinfo=${HS_FIO_FASTINFO_LEN:-186}
pg_log=${HS_FIO_PGLOG_LEN:-173}
pg_dup=${HS_FIO_PGLOG_DUP_LEN:-57}
out=${1:-$PWD/objectstore-fio-$(date +%Y%m%d-%H%M%S)}

# ---------------------------------------------------------------- checks
[ -n "${CEPH_BUILD:-}" ] || skip "CEPH_BUILD is not set (a Ceph build with HybridStore and its fio engine: src/tools/ceph-integrate --fio)"
CEPH_BUILD=$(cd "$CEPH_BUILD" 2> /dev/null && pwd) || skip "CEPH_BUILD is not a directory"
require_ceph_build fio
engine=$CEPH_BUILD/lib/libfio_ceph_objectstore.so
[ -f "$engine" ] || skip "$engine is missing (build the fio_ceph_objectstore target: src/tools/ceph-integrate --fio GIT_DIR)"
fio=$CEPH_BUILD/bin/fio
export LD_LIBRARY_PATH=$CEPH_BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$fio" --enghelp=libfio_ceph_objectstore.so > /dev/null 2>&1 ||
    skip "$fio does not load $engine (fio --enghelp=libfio_ceph_objectstore.so fails)"
report_python=python3
[ -x /usr/bin/python3 ] && report_python=/usr/bin/python3
command -v "$report_python" > /dev/null || skip "no python3 for the report"
case $HS_FIO_REPEATS in '' | *[!0-9]* | 0) echo "HS_FIO_REPEATS must be a positive number" >&2; exit 2 ;; esac
case $HS_FIO_RUNTIME in '' | *[!0-9]* | 0) echo "HS_FIO_RUNTIME must be a positive number of seconds" >&2; exit 2 ;; esac
for s in $HS_FIO_STORES; do
    case $s in bluestore | hybridstore) ;; *) echo "HS_FIO_STORES: unknown store $s" >&2; exit 2 ;; esac
done
for o in $HS_FIO_HS_OPTIONS; do
    case $o in hybridstore_*=?*) ;; *) echo "HS_FIO_HS_OPTIONS: '$o' is not hybridstore_NAME=VALUE" >&2; exit 2 ;; esac
done
dataset=$(numfmt --from=iec "$HS_FIO_DATASET") || { echo "HS_FIO_DATASET: not a size" >&2; exit 2; }

if [ "$HS_FIO_CLASSES" = 1 ]; then
    # shellcheck source=SCRIPTDIR/../devclass/devclass.sh
    source "$HS_TOP/qa/devclass/devclass.sh"
    no_classes=$(devclass_available 2>&1) || skip "HS_FIO_CLASSES=1 but the classes are off: $no_classes"
    devices=loop
    devices_text="HDD role: hdd profile of the disk model (qa/devclass) under a loop device; SSD role: raw loop device (direct I/O)"
else
    devices=$HS_FIO_DEVICES
    if [ "$devices" = auto ]; then
        devices="file"
        [ "$(id -u)" = 0 ] && command -v losetup > /dev/null && [ -c /dev/loop-control ] && devices=loop
    fi
    case $devices in
    loop) devices_text="loop devices over sparse images, direct I/O, HDD role rotational=1, SSD role rotational=0 (no device classes)" ;;
    file) devices_text="files on the filesystem of OUTDIR, the SSD role's $([ "$HS_FIO_SSD_LAYOUT" = zero ] && echo "written with zeros" || echo sparse), the HDD role's sparse (no device classes)" ;;
    *) echo "HS_FIO_DEVICES must be auto, loop or file" >&2; exit 2 ;;
    esac
fi
case $HS_FIO_SSD_LAYOUT in zero | sparse) ;; *) echo "HS_FIO_SSD_LAYOUT must be zero or sparse" >&2; exit 2 ;; esac

# ---------------------------------------------------------------- matrix
# NAME JOBFILE BS IODEPTH NUMJOBS PGLOG(1, 0, or - for reads)
rows_default() {
    local p
    for p in 1 0; do
        echo "rw4k-exist-qd1-j1 randwrite-existing 4k 1 1 $p"
        echo "rw4k-exist-qd16-j8 randwrite-existing 4k 16 8 $p"
        echo "rw4k-new-qd16-j8 randwrite-new 4k 16 8 $p"
    done
    echo "rr4k-j8 randread 4k 1 8 -"
    echo "sw64k seqwrite 64k 16 1 1"
    echo "sw4m seqwrite 4m 16 1 1"
    echo "sr64k seqread 64k 1 1 -"
    echo "sr4m seqread 4m 1 1 -"
}
rows_full() {
    local kind qd j p
    for kind in exist new; do
        for qd in 1 16 64; do
            for j in 1 8; do
                for p in 1 0; do
                    if [ "$kind" = exist ]; then
                        echo "rw4k-exist-qd$qd-j$j randwrite-existing 4k $qd $j $p"
                    else
                        echo "rw4k-new-qd$qd-j$j randwrite-new 4k $qd $j $p"
                    fi
                done
            done
        done
    done
    echo "rr4k-j1 randread 4k 1 1 -"
    echo "rr4k-j8 randread 4k 1 8 -"
    for p in 1 0; do
        echo "sw64k seqwrite 64k 16 1 $p"
        echo "sw4m seqwrite 4m 16 1 $p"
    done
    echo "sr64k seqread 64k 1 1 -"
    echo "sr4m seqread 4m 1 1 -"
}
case $HS_FIO_MATRIX in
default) matrix=$(rows_default) ;;
full) matrix=$(rows_full) ;;
*) echo "HS_FIO_MATRIX must be default or full" >&2; exit 2 ;;
esac
# The row's full name carries its pglog mode.
rows=()
while read -r name job bs qd nj pg; do
    case $pg in 1) name=$name-pglog ;; 0) name=$name-nopglog ;; esac
    if [ -n "$HS_FIO_ROWS" ] && ! [[ $name =~ $HS_FIO_ROWS ]]; then
        continue
    fi
    rows+=("$name $job $bs $qd $nj $pg")
done <<< "$matrix"
[ ${#rows[@]} -gt 0 ] || { echo "no row of the $HS_FIO_MATRIX matrix matches HS_FIO_ROWS=$HS_FIO_ROWS" >&2; exit 2; }

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)

# ---------------------------------------------------------------- devices
# make_devices DEVDIR: DEVDIR/hdd and DEVDIR/ssd, fresh (the conf files name
# them). Loop devices are recorded in DEVDIR/loops for release_devices.
make_devices() {
    local d=$1 role size rot dev
    mkdir -p "$d" || return 1
    for role in hdd ssd; do
        size=$HS_FIO_SSD_SIZE rot=0
        [ "$role" = hdd ] && size=$HS_FIO_HDD_SIZE rot=1
        case $devices in
        file)
            truncate -s "$size" "$d/$role" || return 1
            if [ "$role" = ssd ] && [ "$HS_FIO_SSD_LAYOUT" = zero ]; then
                dd if=/dev/zero of="$d/$role" bs=4M conv=notrunc oflag=direct status=none \
                    count=$(($(stat -c %s "$d/$role") / 4194304)) || return 1
            fi ;;
        loop)
            if [ "$HS_FIO_CLASSES" = 1 ] && [ "$role" = hdd ]; then
                dev=$(devclass_attach "$d" hdd hdd "$size") || return 1
            elif [ "$HS_FIO_CLASSES" = 1 ]; then
                dev=$(devclass_attach "$d" ssd raw "$size") || return 1
            else
                truncate -s "$size" "$d/$role.img" || return 1
                dev=$(losetup --find --show --direct-io=on "$d/$role.img") || return 1
                echo "$dev" >> "$d/loops"
                [ "$(cat "/sys/block/${dev#/dev/}/loop/dio" 2> /dev/null)" = 1 ] ||
                    log "warning: $dev has no direct I/O (the backing filesystem refused it)"
                echo "$rot" > "/sys/block/${dev#/dev/}/queue/rotational" 2> /dev/null ||
                    log "warning: cannot set rotational=$rot on $dev"
            fi
            ln -sfn "$dev" "$d/$role" || return 1 ;;
        esac
    done
}

release_devices() {
    local d=$1 dev
    [ -d "$d" ] || return 0
    if [ -s "$d/loops" ]; then
        while read -r dev; do
            # Only a loop device this script attached over this directory's image.
            [[ $(losetup -n -O BACK-FILE "$dev" 2> /dev/null) == "$d/"* ]] || continue
            echo 0 > "/sys/block/${dev#/dev/}/queue/rotational" 2> /dev/null
            losetup -d "$dev" 2> /dev/null || log "losetup -d $dev failed"
        done < "$d/loops"
        rm -f "$d/loops"
    fi
    if [ -e "$d/devclass.state" ]; then
        if [ "$HS_FIO_KEEP" = 1 ]; then devclass_detach_all "$d" --keep-images; else devclass_detach_all "$d"; fi
    fi
    return 0
}

current_dev=
fio_pid=
cleanup() {
    # fio first (it holds the devices), then the devices.
    if [ -n "$fio_pid" ] && kill -0 "$fio_pid" 2> /dev/null; then
        kill -TERM "$fio_pid" 2> /dev/null
        sleep 5
        kill -KILL "$fio_pid" 2> /dev/null
        wait "$fio_pid" 2> /dev/null
    fi
    [ -n "$current_dev" ] && release_devices "$current_dev"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

load() { cut -d' ' -f1-3 /proc/loadavg; }

# ---------------------------------------------------------------- one run
# run_fio RDIR JOB WHAT [OUT]: fio on qa/ceph/fio/JOB.fio in RDIR (its
# working directory, where exec_prerun writes), JSON in RDIR/OUT.json and
# the rest in RDIR/OUT.out (OUT defaults to JOB). Returns fio's status, 124
# after a hang: no end within HS_FIO_TIMEOUT seconds, every thread's stack
# then in RDIR/hang-backtraces.txt (gdb), fio killed.
run_fio() {
    local rdir=$1 job=$2 what=$3 o=${4:-$2} start=$SECONDS pid hung=0 rc
    # The subshell becomes fio (exec), so $! is fio.
    (cd "$rdir" && exec "$fio" --output-format=json --output="$rdir/$o.json" "$QA_CEPH_DIR/fio/$job.fio") \
        > "$rdir/$o.out" 2>&1 &
    pid=$!
    fio_pid=$pid
    while kill -0 "$pid" 2> /dev/null; do
        if ((SECONDS - start >= HS_FIO_TIMEOUT)); then
            hung=1
            log "$what: no end after $HS_FIO_TIMEOUT s; stacks in $rdir/hang-backtraces.txt"
            if command -v gdb > /dev/null; then
                timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt" > "$rdir/hang-backtraces.txt" 2>&1
            else
                # No gdb where fio runs (a bare chroot): each thread's name,
                # state and kernel wait channel, which still tell a thread
                # blocked in the kernel from one spinning.
                {
                    echo "no gdb here: each thread's name, state and wait channel from /proc (apt install gdb for stacks)"
                    for t in /proc/"$pid"/task/*; do
                        printf '%s %s %s %s\n' "${t##*/}" "$(cat "$t/comm" 2> /dev/null)" \
                            "$(awk '{print $3}' "$t/stat" 2> /dev/null)" "$(cat "$t/wchan" 2> /dev/null)"
                    done
                } > "$rdir/hang-backtraces.txt" 2>&1
            fi
            kill -TERM "$pid" 2> /dev/null
            for _ in $(seq 30); do kill -0 "$pid" 2> /dev/null || break; sleep 1; done
            kill -KILL "$pid" 2> /dev/null
            break
        fi
        sleep 1
    done
    wait "$pid"
    rc=$?
    fio_pid=
    [ $hung = 1 ] && return 124
    return $rc
}

# run_one ROW JOB BS QD NJ PG STORE REP: one fio process on a fresh store;
# metrics.json beside its output. Fails when the run has no result.
run_one() {
    local row=$1 job=$2 bs=$3 qd=$4 nj=$5 pg=$6 store=$7 rep=$8
    local rdir=$out/runs/$row/$store-$rep size nrfiles rc start
    rm -rf "$rdir"
    mkdir -p "$rdir/osd" || return 1
    if [ "$job" = randwrite-new ]; then
        nrfiles=$((HS_FIO_NEW_OBJECTS / nj))
        size=$((nrfiles * 4096))
    else
        size=$((dataset / nj / 4194304 * 4194304))
        nrfiles=$((size / 4194304))
    fi
    [ "$nrfiles" -gt 0 ] || { log "$row: HS_FIO_DATASET/HS_FIO_NEW_OBJECTS too small for $nj threads"; return 1; }
    local pgflag=$pg oi=0 ss=0 fi=0 pl=0 pd=0
    if [ "$pg" = 1 ]; then
        oi=$pg_oi ss=$pg_snapset fi=$pg_fastinfo pl=$pg_log pd=$pg_dup
        # The engine's setattrs comes before its write: on an object that
        # does not exist yet it fails and aborts the store (randwrite-new.fio).
        [ "$job" = randwrite-new ] && oi=0 ss=0
    else
        pgflag=0
    fi
    current_dev=$rdir/dev
    make_devices "$rdir/dev" || { release_devices "$rdir/dev"; current_dev=; log "$row $store #$rep: cannot make the devices"; return 1; }
    local lstart
    lstart=$(load)
    cat > "$rdir/run.json" << EOF
{"row": "$row", "store": "$store", "rep": $rep, "job": "$job.fio", "bs": "$bs", "iodepth": $qd,
 "numjobs": $nj, "pglog": "$pg", "size_per_job": $size, "nrfiles_per_job": $nrfiles,
 "runtime_target_s": $HS_FIO_RUNTIME, "clk_tck": $(getconf CLK_TCK), "load_start": "$lstart"}
EOF
    local conf=$QA_CEPH_DIR/fio/$store.conf
    if [ "$store" = hybridstore ] && [ -n "$HS_FIO_HS_OPTIONS" ]; then
        conf=$rdir/hybridstore.conf
        { cat "$QA_CEPH_DIR/fio/hybridstore.conf"; echo "[osd]"
          for o in $HS_FIO_HS_OPTIONS; do printf '\t%s = %s\n' "${o%%=*}" "${o#*=}"; done; } > "$conf"
    fi
    start=$SECONDS
    export HS_FIO_CONF=$conf HS_FIO_DIR=$rdir HS_FIO_NUMJOBS=$nj \
        HS_FIO_NRFILES=$nrfiles HS_FIO_SIZE=$size HS_FIO_BS=$bs HS_FIO_IODEPTH=$qd \
        HS_FIO_PGLOG=$pgflag HS_FIO_OI_ATTR_LEN=$oi HS_FIO_SNAPSET_ATTR_LEN=$ss \
        HS_FIO_FASTINFO_LEN=$fi HS_FIO_PGLOG_LEN=$pl HS_FIO_PGLOG_DUP_LEN=$pd \
        HS_FIO_MARK="$QA_CEPH_DIR/objectstore-fio.sh --cpu-mark"
    rc=0
    case $job in
    randwrite-existing | randread | seqread)
        # The objects first, in a fio process of its own (fill.fio says why).
        run_fio "$rdir" fill "$row $store #$rep (fill)" || rc=$?
        ;;
    esac
    [ $rc = 0 ] && { run_fio "$rdir" "$job" "$row $store #$rep" fio || rc=$?; }
    release_devices "$rdir/dev"
    current_dev=
    local ok=0
    if [ $rc = 0 ]; then
        "$report_python" "$QA_CEPH_DIR/objectstore-fio-report.py" run "$rdir" >&2 && ok=1
    fi
    if [ $ok = 0 ]; then
        # The failure goes into metrics.json with the end of fio's output and
        # of the store's log, for REPORT.md.
        local reason="fio exited $rc"
        [ $rc -gt 128 ] && reason="fio died of signal $((rc - 128))"
        [ $rc = 124 ] && reason="fio hung: no end after $HS_FIO_TIMEOUT s, killed (stacks: hang-backtraces.txt)"
        "$report_python" - "$rdir" "$reason" << 'EOF'
import json, os, sys
rdir, why = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(rdir, "run.json")))
try:
    prev = json.load(open(os.path.join(rdir, "metrics.json")))
    if prev.get("why"):
        why = f"{why}; {prev['why']}"
except (OSError, ValueError):
    pass
tail = []
for name, n in (("fill.out", 10), ("fio.out", 15), ("ceph.log", 25)):
    p = os.path.join(rdir, name)
    if os.path.exists(p):
        lines = open(p, errors="replace").read().splitlines()
        if name == "ceph.log":
            # The store's complaints first, else the log's end.
            bad = [l for l in lines if any(w in l for w in ("error", "Error", "ERROR", "abort", "Assert", "assert", "Caught signal", "fail"))]
            lines = bad or lines
        tail += [f"== {name}"] + lines[-n:]
m.update(status="failed", why=why, log_tail="\n".join(tail))
json.dump(m, open(os.path.join(rdir, "metrics.json"), "w"), indent=1, sort_keys=True)
EOF
        log "$row $store #$rep: FAILED ($reason); kept $rdir"
        sed 's/^/    /' "$rdir/fio.out" | tail -8 >&2
        return 1
    fi
    log "$row $store #$rep: $((SECONDS - start)) s"
    if [ "$HS_FIO_KEEP" != 1 ]; then
        rm -rf "${rdir:?}/osd" "${rdir:?}/dev"
    fi
    return 0
}

# ---------------------------------------------------------------- the run
read -r -a stores <<< "$HS_FIO_STORES"
fio_version=$("$fio" --version 2> /dev/null)
release=$(ceph_build_release)
runs_total=$((${#rows[@]} * ${#stores[@]} * HS_FIO_REPEATS))
log "output in $out"
log "$release; $fio_version; engine $engine"
log "devices: $devices_text"
log "matrix $HS_FIO_MATRIX: ${#rows[@]} rows x ${#stores[@]} stores x $HS_FIO_REPEATS repeats = $runs_total runs of $HS_FIO_RUNTIME s; load $(load)"

# meta.json: what the report names (the run's settings, the build, the load).
write_meta() {
    local cmd="CEPH_BUILD=$CEPH_BUILD HS_FIO_MATRIX=$HS_FIO_MATRIX HS_FIO_REPEATS=$HS_FIO_REPEATS"
    cmd+=" HS_FIO_RUNTIME=$HS_FIO_RUNTIME"
    [ -n "$HS_FIO_ROWS" ] && cmd+=" HS_FIO_ROWS='$HS_FIO_ROWS'"
    [ "$HS_FIO_CLASSES" = 1 ] && cmd+=" HS_FIO_CLASSES=1"
    [ -n "$HS_FIO_HS_OPTIONS" ] && cmd+=" HS_FIO_HS_OPTIONS='$HS_FIO_HS_OPTIONS'"
    cmd+=" qa/ceph/objectstore-fio.sh $out"
    printf '%s\n' "${rows[@]}" | "$report_python" -c '
import json, sys
a = dict(x.split("=", 1) for x in sys.argv[2:])
rows = []
for line in sys.stdin:
    name, job, bs, qd, nj, pg = line.split()
    rows.append({"name": name, "job": job + ".fio", "bs": bs, "iodepth": int(qd), "numjobs": int(nj), "pglog": pg})
for k in ("nproc", "repeats", "runtime", "new_objects"):
    a[k] = int(a[k])
a["seconds"] = int(a["seconds"]) if a["seconds"] else None
a["stores"] = a["stores"].split()
a["rows"] = rows
json.dump(a, open(sys.argv[1], "w"), indent=1, sort_keys=True)
' "$out/meta.json" "command=$cmd" "ceph_build=$CEPH_BUILD" "ceph_release=$release" \
        "fio_version=$fio_version" "nproc=$(nproc)" "kernel=$(uname -sr)" "load_start=$load_start" \
        "load_end=${1:-}" "seconds=${2:-}" "devices=$devices_text" "ssd_size=$HS_FIO_SSD_SIZE" \
        "hdd_size=$HS_FIO_HDD_SIZE" "matrix=$HS_FIO_MATRIX" "repeats=$HS_FIO_REPEATS" \
        "runtime=$HS_FIO_RUNTIME" "dataset=$HS_FIO_DATASET" "new_objects=$HS_FIO_NEW_OBJECTS" \
        "oi_attr_len=$pg_oi" "snapset_attr_len=$pg_snapset" "fastinfo_len=$pg_fastinfo" \
        "pglog_len=$pg_log" "pglog_dup_len=$pg_dup" "stores=${stores[*]}" "kv_location=$kv_location"
}
# Where the engine puts RocksDB and the ring: the option's default unless
# HS_FIO_HS_OPTIONS names it.
kv_location=device
for o in $HS_FIO_HS_OPTIONS; do
    case $o in hybridstore_kv_location=*) kv_location=${o#*=} ;; esac
done
load_start=$(load)
write_meta
begin=$SECONDS
failed=0
n=0
for r in "${rows[@]}"; do
    read -r name job bs qd nj pg <<< "$r"
    for ((rep = 1; rep <= HS_FIO_REPEATS; rep++)); do
        order=("${stores[@]}")
        if ((rep % 2 == 0)) && [ ${#stores[@]} = 2 ]; then
            order=("${stores[1]}" "${stores[0]}")
        fi
        for store in "${order[@]}"; do
            n=$((n + 1))
            log "[$n/$runs_total] $name $store #$rep ($job.fio bs=$bs iodepth=$qd numjobs=$nj; load $(load))"
            run_one "$name" "$job" "$bs" "$qd" "$nj" "$pg" "$store" "$rep" || failed=$((failed + 1))
        done
    done
done
write_meta "$(load)" $((SECONDS - begin))
log "all runs in $((SECONDS - begin)) s; load $(load)"
"$report_python" "$QA_CEPH_DIR/objectstore-fio-report.py" report "$out" || { echo "FAILED: the report" >&2; exit 1; }
log "report: $out/REPORT.md"
if [ $failed -gt 0 ]; then
    echo "FAILED: $failed of $runs_total runs (see $out/REPORT.md)"
    exit 1
fi
echo "DONE: $runs_total runs on ${stores[*]}, none failed (figures: $out/REPORT.md)"
