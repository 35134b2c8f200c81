#!/usr/bin/env python3
"""Split a perf profile of the store into the parts docs/small-writes.md budgets.

    perf record -F 2999 -g -D 9000 -o perf.data -- build/bin/hybridstore-bench randwrite \
        --seconds 20 --raw-seconds 0 --no-verify
    perf script -i perf.data -F comm,ip,sym,dso > perf.txt
    qa/perf-split.py perf.txt [US_PER_OP] [--top CATEGORY]

Each sample goes to one category by its call chain (kernel samples by what
the chain went through: futex, io_uring, pwrite/pread; user samples: RocksDB
when any frame is in rocksdb::, else crc32c, malloc, memcpy, the rest of the
store). With US_PER_OP (the CPU per op measured with perf stat, see
docs/small-writes.md 13.1) every share is also printed as us per op.
"""
import collections
import re
import sys


def read_samples(path):
    samples, cur = [], None
    frame = re.compile(r'\s*([0-9a-f]+)\s+(.*)\s+\((.*)\)\s*$')
    with open(path, errors='replace') as f:
        for line in f:
            if not line.strip():
                if cur:
                    samples.append(cur)
                cur = None
                continue
            if not line[0].isspace():
                if cur:
                    samples.append(cur)
                cur = {'comm': line.split()[0], 'frames': []}
            elif cur is not None:
                m = frame.match(line)
                if m:
                    cur['frames'].append((m.group(2), m.group(3)))
    if cur:
        samples.append(cur)
    return samples


def category(s):
    fr = s['frames']
    if not fr:
        return 'unknown'
    leaf_sym, leaf_dso = fr[0]
    syms = ' '.join(f[0] for f in fr)
    if 'kernel' in leaf_dso:
        if 'futex' in syms:
            return 'kernel: futex wait/wake, scheduling'
        if 'io_uring' in syms:
            return 'kernel: io_uring (device I/O)'
        if 'pwrite' in syms or 'pread' in syms or ('write' in syms.lower() and 'vfs' in syms):
            return 'kernel: pwrite/pread (device I/O)'
        if 'schedule' in syms or 'finish_task_switch' in syms:
            return 'kernel: scheduling, other'
        return 'kernel: other'
    if 'rocksdb::' in syms:
        if 'MemTable' in syms or 'InlineSkipList' in syms:
            return 'rocksdb: memtable'
        if 'WriteToWAL' in syms or 'log::Writer' in syms:
            return 'rocksdb: WAL'
        if 'Flush' in syms or 'Compaction' in syms or 'TableBuilder' in syms:
            return 'rocksdb: flush/compaction'
        return 'rocksdb: other'
    if 'crc32c' in leaf_sym.lower():
        return 'crc32c'
    if 'tcmalloc' in leaf_dso or 'operator new' in leaf_sym or 'operator delete' in leaf_sym:
        return 'malloc/free'
    if 'libc' in leaf_dso and any(w in leaf_sym for w in ('memcpy', 'memmove', 'memset')):
        return 'memcpy/memset'
    return 'store and bench: other user code'


def main():
    args = sys.argv[1:]
    top = None
    if '--top' in args:
        i = args.index('--top')
        top = args[i + 1]
        del args[i:i + 2]
    if not args:
        print(__doc__)
        return 2
    samples = read_samples(args[0])
    scale = float(args[1]) if len(args) > 1 else None
    n = len(samples)
    if not n:
        print('no samples')
        return 1

    def row(name, k):
        us = f'  {scale * k / n:6.1f} us/op' if scale else ''
        print(f'  {name:54s} {100 * k / n:5.1f}%{us}')

    cats, comms, both = collections.Counter(), collections.Counter(), collections.Counter()
    for s in samples:
        c = category(s)
        cats[c] += 1
        comms[s['comm']] += 1
        both[(s['comm'], c)] += 1
    print(f'{n} samples')
    print('by category:')
    for c, k in cats.most_common():
        row(c, k)
    print('by thread:')
    for c, k in comms.most_common():
        row(c, k)
    print('thread x category (>= 1%):')
    for (t, c), k in sorted(both.items(), key=lambda x: -x[1]):
        if k / n >= 0.01:
            row(f'{t[:15]:15s} {c}', k)
    if top:
        print(f'top leaves of "{top}":')
        leaves = collections.Counter()
        for s in samples:
            if category(s) == top:
                hs = [f[0] for f in s['frames'] if 'hybridstore::' in f[0]]
                leaves[(s['frames'][0][0][:50], hs[0][:60] if hs else '-')] += 1
        for (leaf, caller), k in leaves.most_common(25):
            row(f'{leaf} | {caller}', k)
    return 0


if __name__ == '__main__':
    sys.exit(main())
