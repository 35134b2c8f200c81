#!/usr/bin/python3
"""Client side of the multi-host ansible test (multihost.sh), over librados
(Debian's python3-rados), from the machine outside the test hosts.

  multihost-client.py put-set   --pool P --dir D [--count N]   random objects, sha256 manifest in D
  multihost-client.py verify-set --pool P --dir D               read them back, compare checksums
  multihost-client.py writer    --pool P --log F --stop-file S  write objects until S exists
  multihost-client.py verify-writer --pool P --log F            errors, latency; read every object back
  multihost-client.py sampler   --log F --stop-file S           every second: osdmap epoch, flags, down
                                                                OSDs, PG states, quorum (JSON lines)
  multihost-client.py check-rolling --samples F --before B --after A --tree T
                                    the OSD restarts of rolling_update.yml: one host at a time,
                                    noout set when each went down, active+clean between hosts

Common options: --conf CEPH_CONF --keyring KEYRING. Every command prints one
JSON summary line and exits 1 when its check fails.
"""
import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time

OBJ_SIZE = 65536


def connect(args, op_timeout=120):
    import rados  # python3-rados
    cluster = rados.Rados(conffile=args.conf, conf={
        'keyring': args.keyring,
        'rados_osd_op_timeout': str(op_timeout),
        'rados_mon_op_timeout': '60',
    })
    cluster.connect(timeout=60)
    return cluster


def content(name, size=OBJ_SIZE):
    seed = hashlib.sha256(name.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def emit(summary, ok):
    summary['ok'] = ok
    print(json.dumps(summary, sort_keys=True))
    return 0 if ok else 1


# --- a set of objects with known checksums ---------------------------------
def put_set(args):
    cluster = connect(args)
    io = cluster.open_ioctx(args.pool)
    rng = random.Random(args.seed)
    os.makedirs(args.dir, exist_ok=True)
    manifest = {}
    total = 0
    for i in range(args.count):
        size = rng.choice([4096, 65536, 262144, 1048576, 1048576 + rng.randrange(1, 65536)])
        data = rng.randbytes(size)
        name = 'cksum-%03d' % i
        io.write_full(name, data)
        manifest[name] = hashlib.sha256(data).hexdigest()
        total += size
    with open(os.path.join(args.dir, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    io.close()
    cluster.shutdown()
    return emit({'objects': len(manifest), 'bytes': total}, True)


def verify_set(args):
    with open(os.path.join(args.dir, 'manifest.json')) as f:
        manifest = json.load(f)
    cluster = connect(args)
    io = cluster.open_ioctx(args.pool)
    bad = []
    for name, want in sorted(manifest.items()):
        try:
            size = io.stat(name)[0]
            got = hashlib.sha256(io.read(name, length=size)).hexdigest()
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            got = 'error: %s' % e
        if got != want:
            bad.append({'object': name, 'want': want, 'got': got})
    io.close()
    cluster.shutdown()
    return emit({'objects': len(manifest), 'mismatches': bad}, not bad)


# --- the client load -----------------------------------------------------------
def writer(args):
    cluster = connect(args, op_timeout=args.op_timeout)
    io = cluster.open_ioctx(args.pool)
    i = 0
    with open(args.log, 'a', buffering=1) as log:
        while not os.path.exists(args.stop_file):
            name = '%s-%06d' % (args.prefix, i)
            t0 = time.time()
            rec = {'t': round(t0, 3), 'name': name}
            try:
                io.write_full(name, content(name))
                rec['ok'] = True
            except Exception as e:  # noqa: BLE001 - every failure is a result
                rec['ok'] = False
                rec['err'] = str(e)
            rec['lat'] = round(time.time() - t0, 3)
            log.write(json.dumps(rec) + '\n')
            i += 1
            time.sleep(args.interval)
    io.close()
    cluster.shutdown()
    return 0


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def verify_writer(args):
    recs = read_log(args.log)
    errors = [r for r in recs if not r['ok']]
    oks = [r for r in recs if r['ok']]
    cluster = connect(args)
    io = cluster.open_ioctx(args.pool)
    bad = []
    for r in oks:
        try:
            got = io.read(r['name'], length=OBJ_SIZE + 1)
        except Exception as e:  # noqa: BLE001
            got = str(e).encode()
        if got != content(r['name']):
            bad.append(r['name'])
    io.close()
    cluster.shutdown()
    lats = sorted(r['lat'] for r in recs) or [0]
    summary = {
        'writes': len(recs), 'errors': len(errors), 'first_errors': errors[:3],
        'read_back': len(oks), 'mismatches': bad[:5], 'max_latency_s': lats[-1],
        'p50_latency_s': lats[len(lats) // 2],
    }
    if args.between:
        t0, t1 = (float(x) for x in args.between.split(','))
        summary['writes_between'] = len([r for r in oks if t0 <= r['t'] and r['t'] + r['lat'] <= t1])
    return emit(summary, not errors and not bad and len(oks) >= args.min_writes)


# --- cluster sampler -------------------------------------------------------------
def command(cluster, fn, prefix, **kw):
    cmd = dict(prefix=prefix, format='json', **kw)
    ret, out, errs = fn(json.dumps(cmd), b'', timeout=5)
    if ret != 0:
        raise RuntimeError('%s: %s %s' % (prefix, ret, errs))
    return json.loads(out)


def sampler(args):
    cluster = connect(args)
    with open(args.log, 'a', buffering=1) as log:
        while not os.path.exists(args.stop_file):
            rec = {'t': round(time.time(), 3)}
            try:
                d = command(cluster, cluster.mon_command, 'osd dump')
                rec['epoch'] = d['epoch']
                rec['flags'] = d.get('flags', '')
                rec['down'] = [o['osd'] for o in d['osds'] if not o['up']]
            except Exception as e:  # noqa: BLE001
                rec['osd_err'] = str(e)
            try:
                p = command(cluster, cluster.mgr_command, 'pg stat')
                p = p.get('pg_summary', p)
                rec['pgs'] = p['num_pgs']
                states = p['num_pg_by_state']
                rec['clean'] = sum(s['num'] for s in states if clean_state(s['name']))
                rec['active'] = sum(s['num'] for s in states if active_state(s['name']))
            except Exception as e:  # noqa: BLE001
                rec['pg_err'] = str(e)
            try:
                q = command(cluster, cluster.mon_command, 'quorum_status')
                rec['quorum'] = q['quorum_names']
            except Exception as e:  # noqa: BLE001
                rec['quorum_err'] = str(e)
            log.write(json.dumps(rec) + '\n')
            time.sleep(max(0.0, args.interval - (time.time() - rec['t'])))
    cluster.shutdown()
    return 0


BAD = ('degraded', 'undersized', 'remapped', 'backfill', 'recover', 'peer', 'stale', 'down',
       'incomplete', 'inconsistent', 'unknown', 'repair', 'activating')


# A PG the mgr last saw active but whose primary has gone silent (stale), or
# that is peering again, serves no I/O: not active for the checks.
NOT_ACTIVE = ('stale', 'peering', 'down', 'incomplete', 'unknown', 'activating')


def active_state(name):
    return 'active' in name.split('+') and not any(b in name for b in NOT_ACTIVE)


def clean_state(name):
    parts = name.split('+')
    return 'active' in parts and 'clean' in parts and not any(b in name for b in BAD)


# --- rolling restart analysis ------------------------------------------------------
def check_rolling(args):
    before = {o['osd']: o for o in json.load(open(args.before))['osds']}
    after_map = json.load(open(args.after))
    after = {o['osd']: o for o in after_map['osds']}
    tree = json.load(open(args.tree))
    host_of = {}
    for n in tree['nodes']:
        if n['type'] == 'host':
            for c in n.get('children', []):
                host_of[c] = n['name']
    samples = read_log(args.samples)
    problems = []

    # every OSD restarted: marked down and up again in a newer epoch
    not_restarted = [i for i in before if i in after and after[i]['up_from'] <= before[i]['up_from']]
    if not_restarted:
        problems.append('not restarted: osd.%s' % ', osd.'.join(map(str, not_restarted)))

    # per host: [first down_at, last up_from] of its OSDs; the intervals must not overlap
    spans = {}
    for i, o in after.items():
        if i not in before or i in not_restarted:
            continue
        h = host_of.get(i, '?')
        lo, hi = spans.get(h, (o['down_at'], o['up_from']))
        spans[h] = (min(lo, o['down_at']), max(hi, o['up_from']))
    order = sorted(spans.items(), key=lambda kv: kv[1][0])
    for (h1, (_, hi1)), (h2, (lo2, _)) in zip(order, order[1:]):
        if lo2 < hi1:
            problems.append('%s went down (epoch %d) before %s was back up (epoch %d)' % (h2, lo2, h1, hi1))
        # active+clean seen between the two hosts
        between = [s for s in samples if 'epoch' in s and 'pgs' in s and hi1 <= s['epoch'] < lo2
                   and not s['down'] and s['clean'] == s['pgs']]
        if not between:
            problems.append('no active+clean sample between %s (up at epoch %d) and %s (down at epoch %d)'
                            % (h1, hi1, h2, lo2))

    # noout set in the OSD map each OSD went down in
    flags_at = {}
    for i, o in after.items():
        if i in not_restarted or i not in before:
            continue
        e = o['down_at']
        if e not in flags_at:
            out = subprocess.run(['ceph', '-c', args.conf, '-k', args.keyring, 'osd', 'dump', str(e),
                                  '--format', 'json'], capture_output=True, text=True, timeout=60)
            flags_at[e] = json.loads(out.stdout).get('flags', '') if out.returncode == 0 else '?'
        if 'noout' not in flags_at[e].split(','):
            problems.append('osd.%d went down in epoch %d without noout (flags: %s)' % (i, e, flags_at[e]))
    if 'noout' in after_map.get('flags', '').split(','):
        problems.append('noout is still set after the playbook')

    # the monitors: never fewer than a majority in quorum
    quorums = [len(s['quorum']) for s in samples if 'quorum' in s]
    if quorums and min(quorums) < 2:
        problems.append('quorum fell to %d monitor(s)' % min(quorums))

    summary = {
        'osds_restarted': len(before) - len(not_restarted), 'host_order': [h for h, _ in order],
        'host_epochs': {h: list(v) for h, v in spans.items()}, 'samples': len(samples),
        'noout_at_down_epochs': flags_at, 'min_quorum': min(quorums) if quorums else None,
        'problems': problems,
    }
    return emit(summary, not problems)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('command', choices=['put-set', 'verify-set', 'writer', 'verify-writer', 'sampler',
                                        'check-rolling'])
    ap.add_argument('--conf', required=True)
    ap.add_argument('--keyring', required=True)
    ap.add_argument('--pool')
    ap.add_argument('--dir')
    ap.add_argument('--count', type=int, default=24)
    ap.add_argument('--seed', type=int, default=39)
    ap.add_argument('--log')
    ap.add_argument('--stop-file')
    ap.add_argument('--prefix', default='load')
    ap.add_argument('--interval', type=float, default=0.2)
    ap.add_argument('--op-timeout', type=int, default=120)
    ap.add_argument('--min-writes', type=int, default=1)
    ap.add_argument('--between', help='T0,T1: count the writes done inside this time window')
    ap.add_argument('--samples')
    ap.add_argument('--before')
    ap.add_argument('--after')
    ap.add_argument('--tree')
    args = ap.parse_args()
    fn = {'put-set': put_set, 'verify-set': verify_set, 'writer': writer, 'verify-writer': verify_writer,
          'sampler': sampler, 'check-rolling': check_rolling}[args.command]
    try:
        return fn(args)
    except Exception as e:  # noqa: BLE001 - one clear line instead of a traceback
        print(json.dumps({'ok': False, 'error': '%s: %s' % (type(e).__name__, e)}))
        return 1


if __name__ == '__main__':
    sys.exit(main())
