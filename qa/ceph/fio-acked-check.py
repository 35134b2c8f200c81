#!/usr/bin/env python3
"""Reads back, from an RBD image, every write fio completed before it stopped.

powercut.sh stops fio's rbd engine at a power cut. fio's own count of writes
("issued") includes those still in flight at the cut, which no client was
ever told are durable, so replaying that many is not a check of acknowledged
writes. This takes instead:

  --order FILE      the offsets of fio's writes in the order it issued them
                    (a replay of the job on fio's null engine with
                    --write_iolog gives exactly that sequence);
  --completed FILE  fio's completion-latency log written with --log_offset=1
                    (one line per completed I/O: time, latency, direction,
                    size, offset, ...);

and reads the 4 KiB block of each completed write from the image. A block
holds that write when fio's verify header is there with its magic, its
offset, its length and the write's number in the sequence (fio numbers the
writes of a job from 0; the header keeps the low 16 bits). The writes fio
issued but never saw complete are read too and only counted: each may or may
not have reached the store.

It prints one summary line and, for each acknowledged write that is not
there, a line saying what the block holds. Exit 0 when every completed write
is there, 1 when one is not, 2 on bad input.

The cluster is the one CEPH_CONF names, as client.admin.
"""

import argparse
import os
import struct
import sys

VERIFY_MAGIC = 0xACCA
BLOCK = 4096


def read_order(path):
    order = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            # iolog v3: "<time> <file> write <offset> <length>", and fio logs
            # an I/O more than once (issue and completion); the first one is
            # its place in the sequence.
            if len(parts) >= 5 and parts[2] == "write":
                order.append(int(parts[3]))
    seen = set()
    unique = []
    for off in order:
        if off not in seen:
            seen.add(off)
            unique.append(off)
    return unique


def read_completed(path):
    done = set()
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = [x.strip() for x in line.split(",")]
            if len(fields) < 5:
                raise ValueError(f"{path}:{n}: not a latency log line with offsets: {line.strip()!r}")
            if fields[2] == "1":  # a write
                done.add(int(fields[4]))
    return done


def describe(block, offset, number):
    if block.count(0) == len(block):
        return "zeros (never written, or lost)"
    magic, _vtype, length, _seed, hdr_off = struct.unpack_from("<HHIQQ", block, 0)
    hdr_number = struct.unpack_from("<H", block, 32)[0]
    if magic != VERIFY_MAGIC:
        return f"no fio header (magic {magic:#x})"
    if length != BLOCK or hdr_off != offset:
        return f"a header for another block (offset {hdr_off}, length {length})"
    if hdr_number != number & 0xFFFF:
        return f"an older or newer write to it (write number {hdr_number}, wanted {number & 0xFFFF})"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", help="the RBD image's pool")
    ap.add_argument("--image", help="the RBD image fio wrote")
    ap.add_argument("--file", help="read the blocks from this file instead (fio on a file, to test this check)")
    ap.add_argument("--order", required=True, help="fio iolog of the writes in issue order")
    ap.add_argument("--completed", required=True, help="fio clat log written with --log_offset=1")
    ap.add_argument("--issued", type=int, required=True, help="the writes fio says it issued")
    ap.add_argument("--prefix-out", help="write here how many writes from the first were all acknowledged")
    args = ap.parse_args()
    if not args.file and not (args.pool and args.image):
        ap.error("give --pool and --image, or --file")

    try:
        order = read_order(args.order)
        completed = read_completed(args.completed)
    except (OSError, ValueError) as e:
        print(f"fio-acked-check: {e}", file=sys.stderr)
        return 2
    if len(order) < args.issued:
        print(f"fio-acked-check: the order has {len(order)} writes, fio issued {args.issued}", file=sys.stderr)
        return 2
    order = order[: args.issued]
    stray = completed - set(order)
    if stray:
        print(f"fio-acked-check: {len(stray)} completed writes are not in the issue order "
              f"(first at {min(stray)}): the order is not this run's", file=sys.stderr)
        return 2

    prefix = 0
    while prefix < len(order) and order[prefix] in completed:
        prefix += 1
    if args.prefix_out:
        with open(args.prefix_out, "w") as f:
            f.write(f"{prefix}\n")
    lost = []
    unacked_there = unacked_absent = 0

    def check(read):
        nonlocal unacked_there, unacked_absent
        for number, offset in enumerate(order):
            why = describe(read(offset), offset, number)
            if offset in completed:
                if why:
                    lost.append((number, offset, why))
            elif why:
                unacked_absent += 1
            else:
                unacked_there += 1

    if args.file:
        with open(args.file, "rb") as f:
            check(lambda offset: os.pread(f.fileno(), BLOCK, offset).ljust(BLOCK, b"\0"))
    else:
        import rados
        import rbd

        cluster = rados.Rados(conffile=os.environ.get("CEPH_CONF", ""), name="client.admin")
        cluster.connect(timeout=60)
        try:
            with cluster.open_ioctx(args.pool) as ioctx, rbd.Image(ioctx, args.image, read_only=True) as image:
                check(lambda offset: image.read(offset, BLOCK))
        finally:
            cluster.shutdown()
    unacked = len(order) - len(completed)
    print(f"{len(completed)} of {len(order)} issued writes acknowledged (the first {prefix} all), "
          f"{len(completed) - len(lost)} read back; of the {unacked} in flight at the cut "
          f"{unacked_there} reached the store, {unacked_absent} did not")
    for number, offset, why in lost:
        print(f"  acknowledged write {number} at offset {offset}: the block holds {why}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
