#!/usr/bin/env bash
# Device classes on a VM whose one virtual disk is equally fast everywhere:
# loop devices that behave like a 7,200-rpm disk or a SATA SSD, for engines to
# be compared on tiers that really differ.
#
#   source qa/devclass/devclass.sh            # as a library, or
#   qa/devclass/devclass.sh <command> ...     # as a command
#
#   devclass_available                      prints why not and fails when the classes
#                                           cannot be used (not root, no /dev/fuse, no
#                                           loop-control, no hybridstore-diskmodel)
#   devclass_attach DIR NAME PROFILE SIZE   prints the loop device of a new disk:
#                                           image DIR/NAME.img, model mounted on
#                                           DIR/NAME.mnt, stats in DIR/NAME.stats.json,
#                                           log in DIR/NAME.log
#   devclass_detach_all DIR [--keep-images] detaches, unmounts and stops all that
#                                           devclass_attach made in DIR; safe to call
#                                           after any failure, and more than once
#   devclass_stats DIR NAME                 has the model write its stats file now
#   devclass_powercut DIR [--seed N] [--keep none|random] [--tear]
#                                           cuts the power of every model of DIR at
#                                           once (attached with DEVCLASS_POWERCUT=1):
#                                           their unflushed writes are lost (all, or
#                                           per 4 KiB block at random), and every
#                                           request fails from then on; returns when
#                                           every image holds its state after the cut.
#                                           Model i (in attach order) gets seed N+i;
#                                           N is printed (random when not given)
#   devclass_throttle DEV RIOPS WIOPS RBPS WBPS
#                                           prints a new cgroup that throttles DEV
#   devclass_unthrottle CGROUP              removes it
#
# PROFILE is a section of qa/devclass/profiles.conf run by hybridstore-diskmodel
# through FUSE (hdd, ssd; fuse-none is the same FUSE path with no delay, to
# measure its floor), or none/raw: the image attached directly, as fast as the
# VM's disk (none sparse; raw, the SSD, written out with zeros first unless
# DEVCLASS_RAW_SPARSE=1). Every loop device is attached with --direct-io=on, so no
# page cache sits between it and the model; attach fails when the kernel did
# not grant direct I/O (/sys/block/loopN/loop/dio).
#
# Environment: DEVCLASS_TOOL (the hybridstore-diskmodel binary; default: found
# in $HS_BUILD_DIR/bin, the checkout's build*/bin, then PATH),
# DEVCLASS_MODEL_ARGS (more arguments for it, e.g. "--set cache_bytes=0"),
# DEVCLASS_POWERCUT=1 (the models keep their unflushed writes undoable in
# DIR/NAME.undo and listen on DIR/NAME.ctl, for devclass_powercut; off by
# default: it costs a read and a write of each written range).
#
# About devclass_throttle: the kernel's blkio throttle (cgroup v1
# blkio.throttle.*_device, or v2 io.max) budgets bytes and requests per time
# slice. It is unfair to sequential I/O split into small bios: each bio pays
# like a random request, and nothing seeks or rotates, so it cannot stand in
# for a disk. It is here for callers who want a plain rate cap on top.

DEVCLASS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEVCLASS_ROOT=$(cd "$DEVCLASS_DIR/../.." && pwd)

_devclass_err() { echo "devclass: $*" >&2; }

# The hybridstore-diskmodel binary, or nothing.
devclass_tool() {
  local c
  for c in "${DEVCLASS_TOOL:-}" ${HS_BUILD_DIR:+"$HS_BUILD_DIR/bin/hybridstore-diskmodel"} \
           "$DEVCLASS_ROOT"/build/bin/hybridstore-diskmodel "$DEVCLASS_ROOT"/build-*/bin/hybridstore-diskmodel \
           "$(command -v hybridstore-diskmodel 2>/dev/null)"; do
    if [[ -n "$c" && -x "$c" ]]; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

devclass_available() {
  local why=()
  [[ $(id -u) -eq 0 ]] || why+=("not root (loop devices and FUSE mounts need it)")
  [[ -c /dev/fuse ]] || why+=("no /dev/fuse")
  [[ -c /dev/loop-control ]] || why+=("no /dev/loop-control")
  command -v losetup >/dev/null || why+=("no losetup (util-linux)")
  command -v fusermount3 >/dev/null || why+=("no fusermount3 (Debian: fuse3)")
  devclass_tool >/dev/null || why+=("hybridstore-diskmodel not built (ninja hybridstore-diskmodel; or set DEVCLASS_TOOL)")
  if ((${#why[@]})); then
    local w
    for w in "${why[@]}"; do echo "devclass unavailable: $w"; done
    return 1
  fi
  return 0
}

_devclass_state() { echo "$1/devclass.state"; }

# Bytes of a size such as 64G (binary multiples, as hybridstore-diskmodel reads them).
_devclass_bytes() {
  local s=${1%iB}
  s=${s%B}
  numfmt --from=iec "$s" 2>/dev/null
}

# Is PID the model serving MNT (and not a process that got its number since)?
_devclass_is_model() {
  local pid=$1 mnt=$2 cmd
  [[ -r /proc/$pid/cmdline ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline")
  [[ $cmd == *hybridstore-diskmodel* && $cmd == *"$mnt"* ]]
}

devclass_attach() {
  local dir=$1 name=$2 profile=$3 size=$4
  if [[ $# -ne 4 || -z $dir || -z $name || -z $profile || -z $size ]]; then
    _devclass_err "usage: devclass_attach DIR NAME PROFILE SIZE"
    return 2
  fi
  if [[ ! $name =~ ^[A-Za-z0-9_.-]+$ ]]; then
    _devclass_err "NAME '$name': letters, digits, . _ - only"
    return 2
  fi
  mkdir -p "$dir" || return 1
  dir=$(cd "$dir" && pwd)
  local state img mnt bytes
  state=$(_devclass_state "$dir")
  img=$dir/$name.img
  mnt=$dir/$name.mnt
  bytes=$(_devclass_bytes "$size")
  if [[ -z $bytes || $bytes -le 0 || $((bytes % 512)) -ne 0 ]]; then
    _devclass_err "SIZE '$size': expected bytes or K/M/G/T, a multiple of 512"
    return 2
  fi
  if [[ -f $state ]] && grep -q "^[a-z]* $name " "$state"; then
    _devclass_err "$name is already attached in $dir (devclass_detach_all first)"
    return 1
  fi
  local loop
  # Whatever fails from here leaves nothing of NAME behind.
  _devclass_attach_fail() {
    _devclass_detach "$dir" 1 "$name" >/dev/null
    return 1
  }
  case $profile in
    none | raw)
      truncate -s "$bytes" "$img" || return 1
      # raw stands for an SSD, which has all its blocks: written out, the
      # image's holes cannot make a DSYNC write through the loop device wait
      # for the host filesystem's allocations (docs/benchmarks.md, "RocksDB
      # on the device"). DEVCLASS_RAW_SPARSE=1 keeps it sparse.
      if [[ $profile == raw && ${DEVCLASS_RAW_SPARSE:-0} != 1 ]]; then
        dd if=/dev/zero of="$img" bs=1M count=$((bytes >> 20)) conv=notrunc oflag=direct status=none || return 1
      fi
      loop=$(losetup --find --show --direct-io=on "$img") || {
        _devclass_err "losetup on $img failed"
        _devclass_attach_fail
        return 1
      }
      echo "loop $name $loop" >>"$state"
      ;;
    *)
      local tool model_profile=$profile
      [[ $profile == fuse-none ]] && model_profile=none
      tool=$(devclass_tool) || {
        _devclass_err "hybridstore-diskmodel not found (set DEVCLASS_TOOL)"
        return 1
      }
      if mountpoint -q "$mnt" 2>/dev/null; then
        _devclass_err "$mnt is already a mount point"
        return 1
      fi
      mkdir -p "$mnt" || return 1
      echo "mount $name $mnt" >>"$state"
      rm -f "$dir/$name.pid"
      local powercut_args=()
      if [[ ${DEVCLASS_POWERCUT:-0} == 1 ]]; then
        powercut_args=(--powercut-undo "$dir/$name.undo" --control "$dir/$name.ctl")
      fi
      # Its own session: a ^C meant for the caller must not unmount the disk
      # under a loop device still attached.
      # shellcheck disable=SC2086
      setsid "$tool" --image "$img" --size "$bytes" --mount "$mnt" --profile "$model_profile" \
        --stats "$dir/$name.stats.json" --pid-file "$dir/$name.pid" --foreground "${powercut_args[@]}" \
        ${DEVCLASS_MODEL_ARGS:-} </dev/null >"$dir/$name.log" 2>&1 &
      local launcher=$! i pid=
      for ((i = 0; i < 200; i++)); do
        if [[ -s $dir/$name.pid ]] && [[ $(stat -c %s "$mnt/disk" 2>/dev/null) == "$bytes" ]]; then
          pid=$(<"$dir/$name.pid")
          break
        fi
        if ! kill -0 "$launcher" 2>/dev/null && [[ ! -s $dir/$name.pid ]]; then
          break
        fi
        sleep 0.05
      done
      if [[ -z $pid ]]; then
        _devclass_err "hybridstore-diskmodel did not come up on $mnt; its log:"
        sed 's/^/  /' "$dir/$name.log" >&2
        # It may still be starting: stop it by the pid it was started with.
        _devclass_is_model "$launcher" "$mnt" && kill -TERM "$launcher" 2>/dev/null
        _devclass_attach_fail
        return 1
      fi
      echo "pid $name $pid" >>"$state"
      loop=$(losetup --find --show --direct-io=on "$mnt/disk") || {
        _devclass_err "losetup on $mnt/disk failed"
        _devclass_attach_fail
        return 1
      }
      echo "loop $name $loop" >>"$state"
      ;;
  esac
  local q=/sys/block/${loop#/dev/}
  if [[ $(cat "$q/loop/dio" 2>/dev/null) != 1 ]]; then
    _devclass_err "$loop has no direct I/O ($q/loop/dio is not 1): the page cache would hide the model; refusing"
    _devclass_attach_fail
    return 1
  fi
  # The kind comes from the model's own description (a profile may have any name).
  if [[ $profile != none && $profile != raw ]] && grep -q "^hybridstore-diskmodel: [^ ]*: hdd " "$dir/$name.log"; then
    # What the kernel sees of a disk: rotational, and the elevator udev
    # gives one. Discard stays on (the model charges nothing for it, and
    # the image stays sparse): writing 0 to queue/discard_max_bytes would
    # outlive the detach and disable discard on this loop device for good.
    echo 1 >"$q/queue/rotational"
    grep -qw mq-deadline "$q/queue/scheduler" 2>/dev/null && echo mq-deadline >"$q/queue/scheduler"
  else
    # Set every time: these outlive a detach and would carry over from the
    # last disk attached on this loop device.
    echo 0 >"$q/queue/rotational"
    echo none >"$q/queue/scheduler" 2>/dev/null || true
  fi
  echo "$loop"
}

devclass_stats() {
  local dir=$1 name=$2 pid
  pid=$(awk -v n="$name" '$1 == "pid" && $2 == n { print $3 }' "$(_devclass_state "$dir")" 2>/dev/null | tail -1)
  if [[ -z $pid ]] || ! _devclass_is_model "$pid" "$dir/$name.mnt"; then
    _devclass_err "no model running for $name in $dir"
    return 1
  fi
  local before
  before=$(stat -c %Y.%y "$dir/$name.stats.json" 2>/dev/null)
  kill -USR1 "$pid"
  local i
  for ((i = 0; i < 100; i++)); do
    [[ $(stat -c %Y.%y "$dir/$name.stats.json" 2>/dev/null) != "$before" ]] && return 0
    sleep 0.02
  done
  _devclass_err "the model of $name did not write $dir/$name.stats.json"
  return 1
}

devclass_powercut() {
  local dir=$1 seed="" keep=none tear=()
  shift || true
  while (($#)); do
    case $1 in
      --seed) seed=${2:-}; shift 2 || return 2 ;;
      --keep) keep=${2:-}; shift 2 || return 2 ;;
      --tear) tear=(--tear); shift ;;
      *)
        _devclass_err "devclass_powercut: unknown argument '$1'"
        return 2
        ;;
    esac
  done
  if [[ -z $dir || ! -d $dir ]] || [[ -n $seed && ! $seed =~ ^[0-9]+$ ]] || [[ $keep != none && $keep != random ]]; then
    _devclass_err "usage: devclass_powercut DIR [--seed N] [--keep none|random] [--tear]"
    return 2
  fi
  dir=$(cd "$dir" && pwd)
  local state tool names=() name
  state=$(_devclass_state "$dir")
  tool=$(devclass_tool) || {
    _devclass_err "hybridstore-diskmodel not found (set DEVCLASS_TOOL)"
    return 1
  }
  [[ -f $state ]] && mapfile -t names < <(awk '$1 == "pid" { print $2 }' "$state")
  if ((${#names[@]} == 0)); then
    _devclass_err "no model runs in $dir"
    return 1
  fi
  for name in "${names[@]}"; do
    if [[ ! -S $dir/$name.ctl ]]; then
      _devclass_err "the model of $name has no power-cut control ($dir/$name.ctl): attach it with DEVCLASS_POWERCUT=1"
      return 1
    fi
  done
  [[ -n $seed ]] || seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  echo "devclass: power cut of ${#names[@]} model(s) in $dir, keep=$keep${tear:+ tear}, seed $seed"
  # All at once: the cuts of one DIR are one power failure.
  local i pids=() rc=0
  for i in "${!names[@]}"; do
    "$tool" cut --control "$dir/${names[$i]}.ctl" --keep "$keep" "${tear[@]}" --seed $((seed + i)) \
      >"$dir/${names[$i]}.cut" 2>&1 &
    pids+=($!)
  done
  for i in "${!names[@]}"; do
    wait "${pids[$i]}" || rc=1
    echo "devclass: ${names[$i]}: $(tr '\n' ' ' <"$dir/${names[$i]}.cut")"
  done
  ((rc == 0)) || _devclass_err "the cut failed on some model (seed $seed)"
  return $rc
}

devclass_detach_all() {
  local dir=$1 keep=0
  [[ ${2:-} == --keep-images ]] && keep=1
  if [[ -z $dir ]]; then
    _devclass_err "usage: devclass_detach_all DIR [--keep-images]"
    return 2
  fi
  _devclass_detach "$dir" "$keep" ""
}

# Undoes what devclass_attach recorded in DIR, for every NAME or just ONLY.
_devclass_detach() {
  local dir=$1 keep=$2 only=$3
  [[ -d $dir ]] || return 0
  dir=$(cd "$dir" && pwd)
  local state rc=0 kind name what i
  state=$(_devclass_state "$dir")
  [[ -f $state ]] || return 0
  # Loop devices first: they hold the model's file open.
  while read -r kind name what; do
    [[ $kind == loop && ( -z $only || $name == "$only" ) ]] || continue
    # Hand the device back as losetup makes it (these outlive the detach).
    local q=/sys/block/${what#/dev/}/queue
    if [[ $(losetup -n -O BACK-FILE "$what" 2>/dev/null) == "$dir/$name."* ]]; then
      echo 0 >"$q/rotational" 2>/dev/null
      echo none >"$q/scheduler" 2>/dev/null
    fi
    for ((i = 0; i < 50; i++)); do
      [[ $(losetup -n -O BACK-FILE "$what" 2>/dev/null) == "$dir/$name."* ]] || break
      losetup -d "$what" 2>/dev/null
      # Detaching is asynchronous while the device is open.
      [[ $(losetup -n -O BACK-FILE "$what" 2>/dev/null) == "$dir/$name."* ]] || break
      sleep 0.1
    done
    if [[ $(losetup -n -O BACK-FILE "$what" 2>/dev/null) == "$dir/$name."* ]]; then
      _devclass_err "$what is still attached (in use?)"
      rc=1
    fi
  done <"$state"
  # Then the mounts: unmounting ends the model's FUSE loop, and it exits.
  while read -r kind name what; do
    [[ $kind == mount && ( -z $only || $name == "$only" ) ]] || continue
    if mountpoint -q "$what" 2>/dev/null; then
      fusermount3 -u "$what" 2>/dev/null || fusermount3 -u -z "$what" 2>/dev/null || umount -l "$what" 2>/dev/null
    fi
  done <"$state"
  # Then the models, by the pid each one wrote, never by name.
  while read -r kind name what; do
    [[ $kind == pid && ( -z $only || $name == "$only" ) ]] || continue
    local mnt=$dir/$name.mnt
    for ((i = 0; i < 100; i++)); do
      _devclass_is_model "$what" "$mnt" || break
      ((i == 50)) && kill -TERM "$what" 2>/dev/null
      sleep 0.05
    done
    if _devclass_is_model "$what" "$mnt"; then
      _devclass_err "model $what for $name ignored SIGTERM; killing it"
      kill -KILL "$what" 2>/dev/null
      rc=1
    fi
    rm -f "$dir/$name.pid"
  done <"$state"
  while read -r kind name what; do
    [[ $kind == mount && ( -z $only || $name == "$only" ) ]] || continue
    if mountpoint -q "$what" 2>/dev/null; then
      _devclass_err "$what is still mounted"
      rc=1
    else
      rmdir "$what" 2>/dev/null
    fi
  done <"$state"
  while read -r kind name what; do
    [[ $kind == pid && ( -z $only || $name == "$only" ) ]] && rm -f "$dir/$name.cut"
  done <"$state"
  if ((!keep)); then
    while read -r kind name what; do
      [[ $kind == loop && ( -z $only || $name == "$only" ) ]] && rm -f "$dir/$name.img" "$dir/$name.undo"
    done <"$state"
  fi
  if ((rc == 0)); then
    if [[ -z $only ]]; then
      rm -f "$state"
    else
      awk -v n="$only" '$2 != n' "$state" >"$state.new" && mv "$state.new" "$state"
      [[ -s $state ]] || rm -f "$state"
    fi
  fi
  return $rc
}

# Prints the cgroup; put the processes to throttle in it (echo PID >CGROUP/cgroup.procs).
# 0 leaves a limit off.
devclass_throttle() {
  local dev=$1 riops=${2:-0} wiops=${3:-0} rbps=${4:-0} wbps=${5:-0}
  if [[ ! -b $dev ]]; then
    _devclass_err "usage: devclass_throttle DEV RIOPS WIOPS RBPS WBPS (DEV a block device)"
    return 2
  fi
  local majmin
  majmin=$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')
  local cg
  if [[ -e /sys/fs/cgroup/blkio/blkio.throttle.read_iops_device ]]; then
    cg=$(mktemp -d /sys/fs/cgroup/blkio/devclass.XXXXXX 2>/dev/null) || {
      cg=/sys/fs/cgroup/blkio/devclass.$$.$RANDOM
      mkdir "$cg"
    } || return 1
    local f v
    for f in read_iops:$riops write_iops:$wiops read_bps:$rbps write_bps:$wbps; do
      v=${f#*:}
      ((v > 0)) && echo "$majmin $v" >"$cg/blkio.throttle.${f%%:*}_device"
    done
  elif grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    grep -qw io /sys/fs/cgroup/cgroup.subtree_control || echo +io >/sys/fs/cgroup/cgroup.subtree_control
    cg=/sys/fs/cgroup/devclass.$$.$RANDOM
    mkdir "$cg" || return 1
    local lim=""
    ((riops > 0)) && lim+=" riops=$riops"
    ((wiops > 0)) && lim+=" wiops=$wiops"
    ((rbps > 0)) && lim+=" rbps=$rbps"
    ((wbps > 0)) && lim+=" wbps=$wbps"
    [[ -n $lim ]] && echo "$majmin$lim" >"$cg/io.max"
  else
    _devclass_err "no blkio (cgroup v1) or io (cgroup v2) controller"
    return 1
  fi
  echo "$cg"
}

devclass_unthrottle() {
  local cg=$1 p parent
  [[ -d $cg && $(basename "$cg") == devclass.* ]] || {
    _devclass_err "usage: devclass_unthrottle CGROUP (one devclass_throttle made)"
    return 2
  }
  parent=$(dirname "$cg")
  while read -r p; do
    [[ -n $p ]] && echo "$p" >"$parent/cgroup.procs" 2>/dev/null
  done <"$cg/cgroup.procs"
  rmdir "$cg"
}

_devclass_main() {
  local cmd=${1:-help}
  shift || true
  case $cmd in
    available)
      devclass_available && echo "devclass: available (tool: $(devclass_tool))"
      ;;
    attach) devclass_attach "$@" ;;
    detach-all) devclass_detach_all "$@" ;;
    stats) devclass_stats "$@" ;;
    powercut) devclass_powercut "$@" ;;
    throttle) devclass_throttle "$@" ;;
    unthrottle) devclass_unthrottle "$@" ;;
    tool) devclass_tool ;;
    help | -h | --help)
      sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
      echo "Commands: available | attach DIR NAME PROFILE SIZE | detach-all DIR [--keep-images]"
      echo "          | stats DIR NAME | powercut DIR [--seed N] [--keep none|random] [--tear]"
      echo "          | throttle DEV RIOPS WIOPS RBPS WBPS | unthrottle CGROUP | tool"
      ;;
    *)
      _devclass_err "unknown command '$cmd' (try help)"
      return 2
      ;;
  esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  _devclass_main "$@"
fi
