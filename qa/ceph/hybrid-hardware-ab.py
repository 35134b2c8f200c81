#!/usr/bin/env python3
"""Compare qa/ceph/hybrid-hardware.sh runs of one row made two ways (an A/B
of one engine option, HH_HS_OPTIONS), run against run.

    hybrid-hardware-ab.py --a NAME --b NAME [--row hybridstore] OUTDIR...

Each OUTDIR is one run; it belongs to side A when its name contains NAME of
--a, to B when it contains --b's (e.g. --a directory --b device for runs
named hh6-raw-1-directory, hh6-raw-2-device, ...). Prints a markdown table
of every rados and RBD figure of REPORT.md, each side's runs and the ratio
of the medians (B over A), then `kv_commit_lat` per write row from the
OSDs' perf dumps (the mean over the OSDs of the row's dump less the one of
the step before it, in ms): the commit's cost, which an A/B of where the
journal lives moves first.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

COMMIT_ROWS = ["rados-write-4K", "rbd-randwrite-4k", "rbd-randrw-70-30"]


def figures(report):
    out = {}
    for line in open(report):
        m = re.match(r"\| (4M|4K) \| (\w+) \((MB/s|IOPS)\) \| ([\d,.]+) \|", line)
        if m:
            out[f"rados {m.group(1)} {m.group(2)} ({m.group(3)})"] = float(m.group(4).replace(",", ""))
        m = re.match(r"\| ([\w-]+) \| (read|write) (IOPS|MB/s|p99 ms) \| ([\d,.]+) \|", line)
        if m:
            out[f"RBD {m.group(1)}, {m.group(2)} {m.group(3)}"] = float(m.group(4).replace(",", ""))
    return out


def commit_ms(run, row_name):
    steps_file = os.path.join(run, row_name, "steps")
    if not os.path.exists(steps_file):
        return {}
    steps = open(steps_file).read().split()

    def dump(step):
        # None for an OSD whose dump is empty or unreadable (the run goes on
        # when `perf dump` fails); that row is then left out.
        out = []
        for f in sorted(glob.glob(os.path.join(run, row_name, f"perf-{step}-osd.*.json"))):
            try:
                out.append(json.load(open(f))["hybridstore"]["kv_commit_lat"])
            except (ValueError, KeyError):
                out.append(None)
        return out

    out = {}
    for row in COMMIT_ROWS:
        if row not in steps or steps.index(row) == 0:
            continue
        before, after = dump(steps[steps.index(row) - 1]), dump(row)
        if not before or len(before) != len(after) or None in before or None in after:
            continue
        ms = [(b["sum"] - a["sum"]) / max(1, b["avgcount"] - a["avgcount"]) * 1000 for a, b in zip(before, after)]
        out[row] = sum(ms) / len(ms)
    return out


def fmt(v):
    return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="a part of the name of side A's run directories")
    ap.add_argument("--b", required=True, help="a part of the name of side B's run directories")
    ap.add_argument("--row", default="hybridstore", help="the row the runs made (default hybridstore)")
    ap.add_argument("runs", nargs="+", metavar="OUTDIR")
    args = ap.parse_args()
    sides = {"a": [], "b": []}
    for run in args.runs:
        name = os.path.basename(os.path.normpath(run))
        side = "b" if args.b in name else "a" if args.a in name else None
        if side is None:
            sys.exit(f"{run}: its name contains neither '{args.a}' nor '{args.b}'")
        report = os.path.join(run, "REPORT.md")
        if not os.path.exists(report):
            sys.exit(f"{run}: no REPORT.md (did the run finish?)")
        sides[side].append(run)
    if not sides["a"] or not sides["b"]:
        sys.exit("each side needs at least one run")
    figs = {s: [figures(os.path.join(r, "REPORT.md")) for r in runs] for s, runs in sides.items()}
    print(f"| figure | {args.a} (runs) | {args.b} (runs) | {args.b}/{args.a} (medians) |")
    print("|---|---|---|---|")
    for key in figs["a"][0]:
        a = [f[key] for f in figs["a"] if key in f]
        b = [f[key] for f in figs["b"] if key in f]
        if a and b and statistics.median(a) > 0:
            print(f"| {key} | {'; '.join(map(fmt, a))} | {'; '.join(map(fmt, b))} | "
                  f"{statistics.median(b) / statistics.median(a):.2f} |")
    print()
    print("| run | " + " | ".join(f"{r} kv_commit_lat ms" for r in COMMIT_ROWS) + " |")
    print("|---|" + "---|" * len(COMMIT_ROWS))
    for s in ("a", "b"):
        for run in sides[s]:
            c = commit_ms(run, args.row)
            cells = [f"{c[r]:.2f}" if r in c else "-" for r in COMMIT_ROWS]
            print(f"| {os.path.basename(os.path.normpath(run))} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
