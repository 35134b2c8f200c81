#!/usr/bin/env python3
# Summarise a gperftools heap profile without pprof (docs/memory.md): in-use
# bytes by the first frames inside HybridStore or RocksDB code, symbolised with
# addr2line. Usage: heap-summary.py PROFILE.heap BINARY [FRAMES=2]
import re, subprocess, sys, collections
prof, binary = sys.argv[1], sys.argv[2]
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 2
stacks = []; maps = []; inmaps = False
for line in open(prof):
    if line.startswith('MAPPED_LIBRARIES'): inmaps = True; continue
    if inmaps:
        p = line.split()
        if len(p) >= 6 and p[5].endswith(binary.split('/')[-1]):
            lo, hi = [int(x, 16) for x in p[0].split('-')]
            maps.append((lo, hi, int(p[2], 16)))
        continue
    m = re.match(r'\s*(\d+):\s*(\d+)\s*\[\s*(\d+):\s*(\d+)\]\s*@(.*)', line)
    if m and not line.startswith('heap profile'):
        stacks.append((int(m.group(1)), int(m.group(2)), [int(a, 16) for a in m.group(5).split()]))
base = min(lo - off for lo, hi, off in maps)
def inbin(a): return any(lo <= a < hi for lo, hi, _ in maps)
addrs = sorted({a for _, _, st in stacks for a in st if inbin(a)})
out = subprocess.run(['addr2line', '-f', '-C', '-e', binary] + ['%x' % (a - base - 1) for a in addrs],
                     capture_output=True, text=True).stdout.split('\n')
sym = {a: out[2 * i] for i, a in enumerate(addrs)}
def keep(f):
    return ('hybridstore::' in f or 'rocksdb::' in f) and 'operator new' not in f and 'allocate' not in f.lower()
agg = collections.Counter(); cnt = collections.Counter(); total = 0
for n, b, st in stacks:
    total += b
    fr = [sym.get(a, '?') for a in st]
    ours = [re.sub(r'\(.*', '', f)[:90] for f in fr if keep(f)][:depth]
    k = ' <- '.join(ours) or 'other'
    agg[k] += b; cnt[k] += n
print('total in use: %.1f MB' % (total / 1e6))
for k, b in agg.most_common(18):
    print('%8.1f MB %9d blocks  %s' % (b / 1e6, cnt[k], k))
