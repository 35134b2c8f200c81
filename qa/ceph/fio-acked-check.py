#!/usr/bin/env python3
"""Reads back, from an RBD image, every write fio completed before it stopped.

powercut.sh stops fio's rbd engine at a power cut. librbd sends the writes
then in flight again once the OSD is back, and fio waits for them, so fio's
count of writes ("issued") is normally its count of acknowledged ones; but a
write fio gave up on would be in the first and not the second. So rather
than replay that count, this takes:

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
    """offset -> the time of its completion, in ms of fio's run."""
    done = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = [x.strip() for x in line.split(",")]
            if len(fields) < 5:
                raise ValueError(f"{path}:{n}: not a latency log line with offsets: {line.strip()!r}")
            if fields[2] == "1":  # a write
                done[int(fields[4])] = int(fields[0])
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


def self_test():
    """Builds what fio would leave (an image of verify headers, its issue log
    and completion log) and checks that a whole image passes, a zeroed or
    stale acknowledged block fails naming that write, an unacknowledged
    block missing passes, and a garbage log is refused."""
    import random
    import subprocess
    import tempfile

    rng = random.Random(11)
    size = 256 * BLOCK
    order = rng.sample(range(0, size, BLOCK), 40)
    with tempfile.TemporaryDirectory() as d:
        img = bytearray(size)
        for number, offset in enumerate(order):
            hdr = struct.pack("<HHIQQII", VERIFY_MAGIC, 1, BLOCK, rng.getrandbits(64), offset, 0, 0)
            hdr += struct.pack("<HH", number & 0xFFFF, 0)
            img[offset:offset + len(hdr)] = hdr
            img[offset + 48:offset + BLOCK] = rng.randbytes(BLOCK - 48)
        with open(f"{d}/order", "w") as f:
            f.write("fio version 3 iolog\n0 img add\n1 img open\n")
            for t, offset in enumerate(order):
                f.write(f"{t} img write {offset} {BLOCK}\n{t} img write {offset} {BLOCK}\n")
        unacked = order[-1]
        with open(f"{d}/clat", "w") as f:
            for t, offset in enumerate(order[:-1]):
                f.write(f"{t * 3}, 1500, 1, {BLOCK}, {offset}, 0\n")

        def run(image, completed="clat"):
            with open(f"{d}/img", "wb") as f:
                f.write(image)
            p = subprocess.run([sys.executable, __file__, "--file", f"{d}/img", "--order", f"{d}/order",
                                "--completed", f"{d}/{completed}", "--issued", str(len(order))],
                               capture_output=True, text=True)
            return p.returncode, p.stdout + p.stderr

        rc, out = run(bytes(img))
        assert rc == 0 and "39 of 40 issued writes acknowledged" in out and "1 reached the store" in out, out
        gone = bytearray(img)
        gone[unacked:unacked + BLOCK] = bytes(BLOCK)
        rc, out = run(bytes(gone))
        assert rc == 0 and "0 reached the store, 1 did not" in out, out
        lost = bytearray(img)
        lost[order[7]:order[7] + BLOCK] = bytes(BLOCK)
        rc, out = run(bytes(lost))
        assert rc == 1 and f"acknowledged write 7 at offset {order[7]}" in out and "zeros" in out, out
        stale = bytearray(img)
        struct.pack_into("<H", stale, order[9] + 32, 1234)
        rc, out = run(bytes(stale))
        assert rc == 1 and "acknowledged write 9" in out and "older or newer write" in out, out
        with open(f"{d}/garbage", "w") as f:
            f.write("not a log\n")
        rc, out = run(bytes(img), "garbage")
        assert rc == 2 and "not a latency log line" in out, out
    print("fio-acked-check self-test: passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true", help="check this checker on made-up fio output and exit")
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
    stray = set(completed) - set(order)
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
          f"{len(completed) - len(lost)} read back; of the {unacked} never acknowledged "
          f"{unacked_there} reached the store, {unacked_absent} did not")
    if lost:
        # When the acknowledgements of the lost writes came, against the
        # last acknowledgement of a write that is there: acknowledgements
        # after the cut show as a burst past it.
        kept = [completed[o] for o in order if o in completed and o not in {x[1] for x in lost}]
        first_lost = min(completed[x[1]] for x in lost)
        before = max((t for t in kept if t <= first_lost), default=None)
        print(f"  the lost writes were acknowledged from {first_lost} ms of fio's run to "
              f"{max(completed[x[1]] for x in lost)} ms; the last write that reads back acknowledged "
              f"before them: {before} ms")
    for number, offset, why in lost:
        print(f"  acknowledged write {number} at offset {offset} (at {completed[offset]} ms): the block holds {why}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
