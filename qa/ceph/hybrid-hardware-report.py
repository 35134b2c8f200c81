#!/usr/bin/env python3
"""REPORT.md, results.json and plots of one qa/ceph/hybrid-hardware.sh run.

    hybrid-hardware-report.py OUTDIR

Reads OUTDIR/results.tsv (row, part, name, metric, value), the model check
(OUTDIR/model-check/check.json), fio's logs and the hot-set counter polls, and
writes OUTDIR/REPORT.md, OUTDIR/results.json and OUTDIR/*.png. Every ratio is
hybridstore's figure over the BlueStore-hybrid row's (without that row, over
Debian's stock ceph-osd's), both measured in this
run; a goal's line says met or not met, and by how much.
"""
import argparse
import csv
import glob
import json
import os
import sys
from collections import defaultdict

ROWS = ["hybridstore", "bluestore", "debian-bluestore", "bluestore-hdd", "memstore"]
ROW_TITLE = {
    "hybridstore": "hybridstore (SSD + HDD)",
    "bluestore": "BlueStore, same binary (block HDD, db SSD)",
    "debian-bluestore": "Debian ceph-osd BlueStore (block HDD, db SSD)",
    "bluestore-hdd": "BlueStore all on the HDD",
    "memstore": "ceiling: MemStore, same binary (no device)",
}


def load(out):
    res = defaultdict(dict)  # (row, part, name) -> {metric: value}
    meta = defaultdict(dict)
    with open(os.path.join(out, "results.tsv")) as f:
        for r in csv.reader(f, delimiter="\t"):
            if len(r) < 5:
                continue
            row, part, name, metric, value = r[:5]
            if part == "row":
                # record ROW row KEY TEXT: the text is the fourth field.
                meta[row][name] = value if value else metric
                continue
            try:
                res[(row, part, name)][metric] = float(value)
            except ValueError:
                res[(row, part, name)][metric] = value
    return res, meta


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}" if v >= 1 else f"{v:.3f}"


# The row ratios are taken against (main() sets it from the rows present).
BASE = "bluestore"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def rows_present(meta):
    return [r for r in ROWS if r in meta]


def series(path):
    """fio log (time_ms, value, dir, bs, ...) -> {dir: [(t_s, value)]}."""
    out = defaultdict(list)
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            p = [x.strip() for x in line.split(",")]
            if len(p) < 3:
                continue
            out[int(p[2])].append((int(p[0]) / 1000.0, float(p[1])))
    return out


def per_second(points):
    """fio logs one averaged entry per direction and interval, stamped a few
    milliseconds either side of the interval's end: bucket by the nearest
    second, so that a read and a write entry of one interval add up and two
    intervals never do."""
    b = defaultdict(float)
    for t, v in points:
        b[int(round(t))] += v
    return b


def rados_sustained(path):
    """rados bench's per-second lines (sec, cur ops, started, finished, ...):
    objects finished per second over the second half of the run."""
    pts = []
    if not os.path.exists(path):
        return None
    for line in open(path):
        p = line.split()
        if len(p) >= 4 and p[0].isdigit() and p[1].isdigit() and p[3].isdigit():
            pts.append((int(p[0]), int(p[3])))
    if len(pts) < 4:
        return None
    mid, last = pts[len(pts) // 2], pts[-1]
    return (last[1] - mid[1]) / max(1, last[0] - mid[0])


def p99_by_window(lat_log, window):
    """Per-IO latency log (ns) -> [(t_s, p99_ms)] per window of seconds."""
    buckets = defaultdict(list)
    if not os.path.exists(lat_log):
        return []
    with open(lat_log) as f:
        for line in f:
            p = line.split(",")
            if len(p) < 3:
                continue
            buckets[int(int(p[0]) / 1000.0 // window)].append(int(p[1]))
    out = []
    for k in sorted(buckets):
        v = sorted(buckets[k])
        out.append(((k + 0.5) * window, v[min(len(v) - 1, int(0.99 * len(v)))] / 1e6))
    return out


def step_bounds(out, row):
    """{step: (host CPU busy share, mean HDD busy share)} from the snapshots
    taken after each step (snapshot_counters): the host's /proc/stat line and
    the disk model's busy/elapsed nanoseconds, differenced step to step."""
    d = os.path.join(out, row)
    try:
        steps = [s.strip() for s in open(os.path.join(d, "steps")) if s.strip()]
    except OSError:
        return {}

    def cpu(step):
        try:
            lines = open(os.path.join(d, f"cpu-{step}.txt")).read().splitlines()
            f = [int(x) for x in lines[0].split()[1:9]]
        except (OSError, ValueError, IndexError):
            return None
        # The OSDs' ticks (a line per OSD, after the host's), when all three were read.
        osd = [int(x.split()[1]) for x in lines[1:] if x.startswith("osd.")]
        return sum(f), f[3] + f[4], (sum(osd) if len(osd) == 3 else None)  # total, idle + iowait, OSDs

    def hdd(step):
        busy = elapsed = 0
        for i in range(3):
            try:
                m = json.load(open(os.path.join(d, f"hdd-{step}-osd.{i}.json")))["driver"]["model"]
            except (OSError, ValueError, KeyError):
                return None
            busy += m["busy_ns"]
            elapsed += m["elapsed_ns"]
        return busy, elapsed

    res = {}
    for prev, step in zip(steps, steps[1:]):
        c0, c1, h0, h1 = cpu(prev), cpu(step), hdd(prev), hdd(step)
        cs = hs = osd = None
        if c0 and c1 and c1[0] > c0[0]:
            cs = 1 - (c1[1] - c0[1]) / (c1[0] - c0[0])
            if c0[2] is not None and c1[2] is not None and c1[2] >= c0[2]:
                # /proc/stat's first line sums every CPU: the OSDs' share of all of it.
                osd = (c1[2] - c0[2]) / (c1[0] - c0[0])
        if h0 and h1 and h1[1] > h0[1]:
            hs = (h1[0] - h0[0]) / (h1[1] - h0[1])
        res[step] = (cs, hs, osd)
    return res


def bound_phrase(b):
    if not b or b[0] is None:
        return ""
    cpu, hdd, osd = b
    text = f"CPU {100 * cpu:.0f}% busy"
    if osd is not None:
        text += f" ({100 * osd:.0f}% in the OSDs)"
    if hdd is not None:
        text += f", HDDs {100 * hdd:.0f}% busy"
    if cpu >= 0.9 and (hdd is None or hdd < 0.8):
        text += ": bounded by the CPU"
    elif hdd is not None and hdd >= 0.8:
        text += ": bounded by the HDDs"
    return text


def main():
    ap = argparse.ArgumentParser(
        description="Write REPORT.md, results.json and plots for one qa/ceph/hybrid-hardware.sh run.")
    ap.add_argument("outdir", help="the run's output directory (holds results.tsv)")
    out = ap.parse_args().outdir
    if not os.path.isfile(os.path.join(out, "results.tsv")):
        sys.exit(f"{out}: no results.tsv (not a hybrid-hardware.sh output directory)")
    res, meta = load(out)
    rows = rows_present(meta)
    # The BlueStore of the same binary is the baseline; without that row,
    # Debian's stock ceph-osd (the same release) is.
    global BASE
    BASE = "bluestore" if "bluestore" in rows or "debian-bluestore" not in rows else "debian-bluestore"
    lines = ["# HybridStore against BlueStore on emulated SSD and HDD classes", ""]
    lines.append("Produced by `qa/ceph/hybrid-hardware.sh` (see docs/ceph.md for the command). "
                 "Every figure below was measured in this one run; ratios are hybridstore over "
                 f"{ROW_TITLE[BASE]}.")
    lines.append("")
    lines.append("## Rows")
    lines.append("")
    lines.append("| row | binary | status |")
    lines.append("|---|---|---|")
    for r in rows:
        opts = meta[r].get("hs_options")
        opts = f"; engine options: {opts}" if opts and opts != "none" else ""
        lines.append(f"| {ROW_TITLE[r]} | {meta[r].get('binary', '-')}{opts} | {meta[r].get('status', '-')} |")
    lines.append("")

    # The model check.
    mc = os.path.join(out, "model-check", "check.json")
    lines.append("## The devices (measured in this run, before the rows)")
    lines.append("")
    if os.path.exists(mc):
        j = json.load(open(mc))
        lines.append(f"fio (libaio, direct) on the loop devices of the classes, {j.get('runtime_s')} s a row, "
                     f"load average {' '.join(j.get('host', {}).get('loadavg', []))} when it ran. "
                     "hdd = the 7,200-rpm profile of qa/devclass/profiles.conf through the disk model; "
                     "raw = a sparse image on this machine's disk (the SSD of every row).")
        lines.append("")
        lines.append("| class | job | measured | published range | mean latency | model CPU / request | |")
        lines.append("|---|---|---|---|---|---|---|")
        for x in j.get("rows", []):
            unit = "IOPS" if x["metric"] == "iops" else "MB/s"
            rng = "-" if x["lo"] is None else f"{x['lo']:g}-{x['hi']:g} ({x['source']})"
            verdict = "info" if x["pass"] is None else ("PASS" if x["pass"] else "FAIL")
            cpu = x["cpu_us_per_request"]["model"]
            lines.append(f"| {x['class']} | {x['row']} | {fmt(x['value'])} {unit} | {rng} | "
                         f"{x['lat_mean_us']:.0f} us | {cpu:.1f} us | {verdict} |")
        dc = j.get("data_check", {})
        lines.append("")
        lines.append(f"Data check through the hdd model: {'PASS' if dc.get('pass') else 'FAIL ' + dc.get('notes', '')}. "
                     f"The model's own CPU per request: at most "
                     f"{fmt(j.get('summary', {}).get('model_cpu_us_per_request_max'), 2)} us (what limits a row "
                     "is the modelled disk, not the model).")
    else:
        lines.append("(no model check in this run)")
    lines.append("")

    def get(row, part, name, metric):
        return res.get((row, part, name), {}).get(metric)

    goals = []

    # rados bench.
    if any(k[1] == "rados" for k in res):
        lines.append("## rados bench (16 in flight)")
        lines.append("")
        head = "| object | mode | " + " | ".join(ROW_TITLE[r] for r in rows) + " | hybridstore / BlueStore |"
        lines.append(head)
        lines.append("|---|---|" + "---|" * len(rows) + "---|")
        for bs in ("4M", "4K"):
            metric = "mbs" if bs == "4M" else "iops"
            unit = "MB/s" if bs == "4M" else "IOPS"
            for mode in ("write", "seq", "rand"):
                vals = [get(r, "rados", f"{mode}-{bs}", metric) for r in rows]
                rt = ratio(get("hybridstore", "rados", f"{mode}-{bs}", metric),
                           get(BASE, "rados", f"{mode}-{bs}", metric))
                lines.append(f"| {bs} | {mode} ({unit}) | " + " | ".join(fmt(v) for v in vals) +
                             f" | {fmt(rt, 2) if rt else '-'} |")
        lines.append("")
        sust4k = {r: rados_sustained(os.path.join(out, r, "rados-write-4K.txt")) for r in rows}
        if any(sust4k.values()):
            lines.append("Sustained 4 KiB writes (objects completed a second over the run's second half): " +
                         ", ".join(f"{ROW_TITLE[r]} {fmt(v)}" for r, v in sust4k.items() if v))
            lines.append("")
        goals.append(("rados 4 KiB writes, sustained", ratio(sust4k.get("hybridstore"), sust4k.get(BASE)), 3.0,
                      ratio(sust4k.get("memstore"), sust4k.get(BASE))))
        goals.append(("rados 4 KiB random reads", ratio(get("hybridstore", "rados", "rand-4K", "iops"),
                                                        get(BASE, "rados", "rand-4K", "iops")), 3.0,
                      ratio(get("memstore", "rados", "rand-4K", "iops"), get(BASE, "rados", "rand-4K", "iops"))))
        goals.append(("rados 4 MiB writes", ratio(get("hybridstore", "rados", "write-4M", "mbs"),
                                                  get(BASE, "rados", "write-4M", "mbs")), 0.95))
        goals.append(("rados 4 MiB sequential reads", ratio(get("hybridstore", "rados", "seq-4M", "mbs"),
                                                            get(BASE, "rados", "seq-4M", "mbs")), 0.95))

    # RBD.
    rbd_jobs = ["randwrite-4k", "randread-4k", "seqwrite-64k", "randrw-70-30"]
    if any(k[1] == "rbd" and k[2] in rbd_jobs for k in res):
        lines.append("## RBD (fio rbd engine, 16 in flight, one image)")
        lines.append("")
        lines.append("| job | figure | " + " | ".join(ROW_TITLE[r] for r in rows) + " | ratio |")
        lines.append("|---|---|" + "---|" * len(rows) + "---|")
        for job in rbd_jobs:
            for d in ("write", "read"):
                for m, label in (("iops", "IOPS"), ("mbs", "MB/s"), ("p99_ms", "p99 ms")):
                    vals = [get(r, "rbd", job, f"{d}_{m}") for r in rows]
                    if all(v is None for v in vals):
                        continue
                    rt = ratio(get("hybridstore", "rbd", job, f"{d}_{m}"), get(BASE, "rbd", job, f"{d}_{m}"))
                    lines.append(f"| {job} | {d} {label} | " + " | ".join(fmt(v) for v in vals) +
                                 f" | {fmt(rt, 2) if rt else '-'} |")
        lines.append("")
        verify = [k for k in res if k[1] == "rbd" and k[2].startswith("verify")]
        if verify:
            lines.append("Verifying passes (fio --verify=crc32c, fatal on a mismatch): " +
                         ", ".join(sorted({f"{k[0]} {k[2]}" for k in verify})) + ": all completed without a "
                         "verification error (a mismatch stops the run).")
            lines.append("")
        # Sustained: the second half of the randwrite run.
        sust = {}
        for r in rows:
            s = series(os.path.join(out, r, "fio-randwrite-4k_iops.1.log"))
            pts = sorted(per_second(s.get(1, [])).items())
            if pts:
                half = pts[len(pts) // 2:]
                sust[r] = sum(v for _, v in half) / len(half)
        if sust:
            lines.append("Sustained 4 KiB random writes (mean IOPS of the run's second half): " +
                         ", ".join(f"{ROW_TITLE[r]} {fmt(v)}" for r, v in sust.items()))
            lines.append("")
        goals.append(("RBD 4 KiB random writes, sustained", ratio(sust.get("hybridstore"), sust.get(BASE)), 3.0,
                      ratio(sust.get("memstore"), sust.get(BASE))))

    # Hot set.
    if any(k[1] == "rbd" and k[2] == "hotset" for k in res):
        lines.append("## Hot set (90% of 4 KiB ops on a tenth of the image, 10% writes)")
        lines.append("")
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            plt = None
        last = {}
        p99_last = {}
        if plt:
            fig, axes = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
        for r in rows:
            s = series(os.path.join(out, r, "fio-hotset_iops.1.log"))
            tot = per_second(s.get(0, []) + s.get(1, []))
            pts = sorted(tot.items())
            if not pts:
                continue
            tail = [v for t, v in pts if t >= pts[-1][0] - 60]
            last[r] = sum(tail) / len(tail)
            lat = p99_by_window(os.path.join(out, r, "fio-hotset_clat.1.log"), 10)
            if lat:
                p99_last[r] = lat[-1][1] if len(lat) < 6 else sorted(v for _, v in lat[-6:])[-1]
            if plt:
                axes[0].plot([t for t, _ in pts], [v for _, v in pts], label=ROW_TITLE[r])
                if lat:
                    axes[1].plot([t for t, _ in lat], [v for _, v in lat], label=ROW_TITLE[r])
        poll = os.path.join(out, "hybridstore", "hotset-counters.tsv")
        moved = []
        first = None
        if os.path.exists(poll):
            by_t = defaultdict(lambda: [0, 0, 0, 0, 0])
            for rr in csv.reader(open(poll), delimiter="\t"):
                if len(rr) < 8:
                    continue
                t = float(rr[0])
                v = by_t[round(t)]
                v[0] += int(rr[2])
                v[1] += int(rr[3])
                v[2] += int(rr[4])
                v[3] += int(rr[5])
                v[4] += int(rr[6])
            moved = sorted(by_t.items())
            if moved:
                # The counters count since the OSDs started: the hot set's
                # share is what changed during it.
                first = list(moved[0][1])
                moved = [(t, [a - b for a, b in zip(v, first)]) for t, v in moved]
            if plt and moved:
                axes[2].plot([t for t, _ in moved], [v[1] / 2**20 for _, v in moved], label="promoted (MiB, cumulative)")
                axes[2].plot([t for t, _ in moved], [v[2] / 2**20 for _, v in moved], label="demoted (MiB)")
                axes[2].plot([t for t, _ in moved], [v[4] / 2**20 for _, v in moved], label="written back (MiB)")
                ax2 = axes[2].twinx()
                ax2.step([t for t, _ in moved], [v[0] for _, v in moved], color="black", where="post",
                         label="passes (all OSDs)")
                ax2.set_ylabel("migration passes")
        if plt:
            axes[0].set_ylabel("IOPS (reads + writes)")
            axes[1].set_ylabel("p99 latency, ms (10 s windows)")
            axes[1].set_yscale("log")
            axes[2].set_ylabel("hybridstore: bytes moved")
            axes[2].set_xlabel("seconds into the hot-set run")
            for a in axes:
                a.legend(fontsize=8, loc="upper left")
                a.grid(alpha=0.3)
            fig.tight_layout()
            fig.savefig(os.path.join(out, "hotset.png"), dpi=90)
            lines.append("![hot set over time](hotset.png)")
            lines.append("")
        lines.append("| row | IOPS, last 60 s | p99 ms, last minute (worst 10 s window) | IOPS, whole run | p99 ms, whole run |")
        lines.append("|---|---|---|---|---|")
        for r in rows:
            rd, wr = get(r, "rbd", "hotset", "read_iops"), get(r, "rbd", "hotset", "write_iops")
            whole = None if rd is None and wr is None else (rd or 0) + (wr or 0)
            lines.append(f"| {ROW_TITLE[r]} | {fmt(last.get(r))} | {fmt(p99_last.get(r), 2)} | {fmt(whole)} | "
                         f"{fmt(get(r, 'rbd', 'hotset', 'read_p99_ms'), 2)} |")
        lines.append("")
        if moved:
            v = moved[-1][1]
            lines.append(f"hybridstore's migrator during the hot set (3 OSDs together): {v[0]} passes, "
                         f"{v[1] / 2**20:.0f} MiB promoted, {v[2] / 2**20:.0f} MiB demoted, "
                         f"{v[3] / 2**20:.0f} MiB promoted on reads, {v[4] / 2**20:.0f} MiB written back.")
            lines.append("")
        goals.append(("hot-set IOPS after migration", ratio(last.get("hybridstore"), last.get(BASE)), 3.0))
        pr = ratio(p99_last.get(BASE), p99_last.get("hybridstore"))
        goals.append(("hot-set p99 after migration (BlueStore's over hybridstore's)", pr, 3.0))

    # What bounded each step: the host's CPU or the modelled HDDs.
    bounds = {r: step_bounds(out, r) for r in rows}
    if any(bounds.values()):
        steps = []
        for r in rows:
            for st in bounds[r]:
                if st not in steps:
                    steps.append(st)
        lines.append("## What bounded each step (host CPU busy, of it in the OSDs / HDD busy, the 3 OSDs' disk models together)")
        lines.append("")
        lines.append("| step | " + " | ".join(ROW_TITLE[r] for r in rows) + " |")
        lines.append("|---|" + "---|" * len(rows))
        for st in steps:
            cells = []
            for r in rows:
                b = bounds[r].get(st)
                if not b or b[0] is None:
                    cells.append("-")
                else:
                    osd = "" if b[2] is None else f" ({100 * b[2]:.0f}%)"
                    cells.append(f"{100 * b[0]:.0f}%{osd} / " + ("-" if b[1] is None else f"{100 * b[1]:.0f}%"))
            lines.append(f"| {st} | " + " | ".join(cells) + " |")
        lines.append("")
    goal_step = {
        "rados 4 KiB writes, sustained": "rados-write-4K",
        "rados 4 KiB random reads": "rados-rand-4K",
        "rados 4 MiB writes": "rados-write-4M",
        "rados 4 MiB sequential reads": "rados-seq-4M",
        "RBD 4 KiB random writes, sustained": "rbd-randwrite-4k",
        "hot-set IOPS after migration": "rbd-hotset",
        "hot-set p99 after migration (BlueStore's over hybridstore's)": "rbd-hotset",
    }

    lines.append("## Goals (ratios from this run)")
    lines.append("")
    lines.append("The ceiling column is MemStore of the same binary over the BlueStore row: the ratio a "
                 "store that costs nothing (no device, no checksum, no metadata database) reaches here, "
                 "with the OSD, the clients and the mon on the same CPU. A target above it is out of "
                 "reach of any store on this host.")
    lines.append("")
    lines.append("| goal | ratio | target | | ceiling | hybridstore's step | BlueStore's step |")
    lines.append("|---|---|---|---|---|---|---|")
    summary = []
    for goal in goals:
        name, rt, target = goal[:3]
        ceiling = goal[3] if len(goal) > 3 else None
        st = goal_step.get(name)
        why = [bound_phrase(bounds.get(r, {}).get(st)) or "-" for r in ("hybridstore", BASE)]
        ceil_text = "-" if ceiling is None else f"{ceiling:.2f}"
        if rt is None:
            lines.append(f"| {name} | - | >= {target} | not measured | {ceil_text} | {why[0]} | {why[1]} |")
            continue
        ok = rt >= target
        verdict = 'met' if ok else 'NOT met (%.0f%% short)' % (100 * (1 - rt / target))
        if not ok and ceiling is not None and ceiling < target:
            verdict += "; above the host's ceiling"
        lines.append(f"| {name} | {rt:.2f} | >= {target} | {verdict} | {ceil_text} | {why[0]} | {why[1]} |")
        summary.append({"goal": name, "ratio": round(rt, 3), "target": target, "met": ok,
                        "ceiling": None if ceiling is None else round(ceiling, 3),
                        "bounds": {r: bounds.get(r, {}).get(st) for r in ("hybridstore", BASE)}})
    lines.append("")
    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    flat = [{"row": k[0], "part": k[1], "name": k[2], **v} for k, v in sorted(res.items())]
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"rows": {r: meta[r] for r in rows}, "results": flat, "goals": summary}, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
