#!/usr/bin/python3
"""Random object operations against a pool, each checked against a model.

What Ceph's ceph_test_rados does for the teuthology `rados` task, for the
operations that need no snapshots: writes at random offsets, appends,
deletes, xattr updates, and reads that compare data and xattrs with what was
acknowledged. Every thread owns its own objects, so the model is exact even
with several operations in flight. At the end every object is read back.

Deterministic for a given --seed (operation sequence and data). Needs the
python3-rados bindings (Debian's python3-rados) and a cluster reachable
through CEPH_CONF or /etc/ceph/ceph.conf.

  rados-model.py --pool P --ops 4000 --objects 200 --threads 8 \
      --weights read=100,write=100,append=40,delete=20,setattr=20,rmattr=10
"""
import argparse
import os
import random
import sys
import threading
import time

OPS = ("read", "write", "append", "delete", "setattr", "rmattr")


def parse_weights(text):
    weights = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        if name not in OPS:
            raise SystemExit("rados-model: unknown op %r (known: %s)" % (name, ", ".join(OPS)))
        weights[name] = int(value)
    if not any(weights.values()):
        raise SystemExit("rados-model: every op weight is zero")
    return weights


class Mismatch(Exception):
    pass


class Worker:
    """Runs ops on the objects NAME-<thread>-<i> and keeps their model."""

    def __init__(self, ioctx, args, index, ops):
        self.ioctx = ioctx
        self.args = args
        self.index = index
        self.ops = ops
        self.rng = random.Random(args.seed * 1000003 + index)
        self.names = ["%s-%d-%d" % (args.prefix, index, i) for i in range(args.objects_per_thread)]
        self.data = {}    # name -> bytearray, for existing objects
        self.xattrs = {}  # name -> {attr: bytes}
        self.counts = {op: 0 for op in OPS}
        self.error = None
        choices = [(op, w) for op, w in args.weights.items() if w > 0]
        self.op_names = [op for op, _ in choices]
        self.op_weights = [w for _, w in choices]

    def payload(self, n):
        return self.rng.randbytes(n)

    def stride(self):
        return self.rng.randint(self.args.min_stride, self.args.max_stride)

    def do_read(self, name):
        import rados
        want = self.data.get(name)
        if want is None:
            try:
                self.ioctx.stat(name)
            except rados.ObjectNotFound:
                return
            raise Mismatch("%s exists but was deleted" % name)
        got = self.ioctx.read(name, length=len(want) + 4096, offset=0)
        if got != bytes(want):
            raise Mismatch("%s: read %d bytes, expected %d (first difference at %s)" % (
                name, len(got), len(want), first_difference(got, want)))
        attrs = {k: bytes(v) for k, v in self.ioctx.get_xattrs(name) if k.startswith("model.")}
        if attrs != self.xattrs.get(name, {}):
            raise Mismatch("%s: xattrs %s, expected %s" % (name, sorted(attrs), sorted(self.xattrs.get(name, {}))))

    def do_write(self, name):
        cur = self.data.setdefault(name, bytearray())
        offset = self.rng.randint(0, max(0, self.args.max_size - self.args.min_stride))
        buf = self.payload(min(self.stride(), self.args.max_size - offset))
        self.ioctx.write(name, buf, offset)
        if len(cur) < offset:
            cur.extend(b"\0" * (offset - len(cur)))
        cur[offset:offset + len(buf)] = buf

    def do_append(self, name):
        cur = self.data.setdefault(name, bytearray())
        if len(cur) >= self.args.max_size:
            return self.do_write(name)
        buf = self.payload(min(self.stride(), self.args.max_size - len(cur)))
        self.ioctx.append(name, buf)
        cur.extend(buf)

    def do_delete(self, name):
        import rados
        if name in self.data:
            self.ioctx.remove_object(name)
            del self.data[name]
            self.xattrs.pop(name, None)
        else:
            try:
                self.ioctx.remove_object(name)
            except rados.ObjectNotFound:
                return
            raise Mismatch("%s: removing a deleted object succeeded" % name)

    def do_setattr(self, name):
        if name not in self.data:
            return self.do_write(name)
        attr = "model.%d" % self.rng.randint(0, 7)
        value = self.payload(self.rng.randint(1, 256))
        self.ioctx.set_xattr(name, attr, value)
        self.xattrs.setdefault(name, {})[attr] = value

    def do_rmattr(self, name):
        attrs = self.xattrs.get(name)
        if not attrs:
            return self.do_setattr(name)
        attr = self.rng.choice(sorted(attrs))
        self.ioctx.rm_xattr(name, attr)
        del attrs[attr]

    def run(self, deadline):
        try:
            for _ in range(self.ops):
                if deadline and time.monotonic() > deadline:
                    break
                op = self.rng.choices(self.op_names, self.op_weights)[0]
                name = self.rng.choice(self.names)
                getattr(self, "do_" + op)(name)
                self.counts[op] += 1
            for name in self.names:
                self.do_read(name)
        except Exception as e:  # a failed op or a mismatch ends the run
            self.error = "%s: %s" % (type(e).__name__, e)


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pool", required=True)
    p.add_argument("--create-pool", action="store_true", help="create the pool if it is missing")
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--objects", type=int, default=50)
    p.add_argument("--threads", type=int, default=1, help="operations in flight (one per thread)")
    p.add_argument("--weights", type=parse_weights, default=parse_weights("read=100,write=100"))
    p.add_argument("--max-size", type=int, default=1 << 20, help="largest object, bytes")
    p.add_argument("--min-stride", type=int, default=1024)
    p.add_argument("--max-stride", type=int, default=256 << 10)
    p.add_argument("--max-seconds", type=float, default=0, help="stop issuing ops after this long (0: no limit)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prefix", default="model")
    p.add_argument("--conf", default=os.environ.get("CEPH_CONF", ""))
    args = p.parse_args()
    if args.min_stride < 1 or args.max_stride < args.min_stride or args.max_size < args.min_stride:
        raise SystemExit("rados-model: need 1 <= min-stride <= max-stride <= max-size")
    args.threads = max(1, min(args.threads, args.objects))
    args.objects_per_thread = max(1, args.objects // args.threads)

    import rados
    cluster = rados.Rados(conffile=args.conf or "")
    cluster.connect(timeout=60)
    try:
        if not cluster.pool_exists(args.pool):
            if not args.create_pool:
                raise SystemExit("rados-model: pool %s does not exist" % args.pool)
            cluster.create_pool(args.pool)
        ioctx = cluster.open_ioctx(args.pool)
        ops_each = [args.ops // args.threads + (1 if i < args.ops % args.threads else 0)
                    for i in range(args.threads)]
        workers = [Worker(ioctx, args, i, ops_each[i]) for i in range(args.threads)]
        deadline = time.monotonic() + args.max_seconds if args.max_seconds else 0
        start = time.monotonic()
        threads = [threading.Thread(target=w.run, args=(deadline,)) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - start
        counts = {op: sum(w.counts[op] for w in workers) for op in OPS}
        objects = sum(len(w.data) for w in workers)
        print("rados-model: %d ops in %.1fs (%s), %d objects checked at the end, seed %d" % (
            sum(counts.values()), took, ", ".join("%s %d" % kv for kv in counts.items() if kv[1]),
            objects, args.seed))
        errors = [w.error for w in workers if w.error]
        for e in errors:
            print("rados-model: FAILED: " + e, file=sys.stderr)
        ioctx.close()
        return 1 if errors else 0
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
