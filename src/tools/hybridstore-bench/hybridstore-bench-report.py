#!/usr/bin/env python3
"""Plots hybridstore-bench runs (the JSON of --json / --report) into PNGs and
an index.html: bandwidth and IOPS over time against the raw device ceiling,
the latency CDF, bytes and objects per tier over time, migrations and
cleaning over time, and erase counts per block when the SSD is raw NAND.

usage: hybridstore-bench-report.py OUTDIR RUN.json [RUN.json ...]
"""
import html
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MIB = 1024.0 * 1024.0
READ_MODES = ("seq", "rand")


def series(run, key):
    return run["series"].get(key, [])


def perf_series(run, key):
    """A counter sampled every second, as the change since the run began."""
    v = run["series"].get("perf", {}).get(key, [])
    return [x - v[0] for x in v] if v else []


def gauge_series(run, key):
    return run["series"].get("perf", {}).get(key, [])


def ops_made(run):
    s = run["summary"]
    for key in ("total_writes_made", "total_reads_made", "total_ops_made"):
        if key in s:
            return s[key]
    return 0


def label_of(run):
    return run["mode"]


def mark_requests_end(run, axes):
    """mixed: the series goes on while the last migration passes finish."""
    end = run.get("mixed", {}).get("requests_end_sec")
    if end is None or end >= series(run, "sec")[-1]:
        return
    for a in axes:
        a.axvline(end, color="black", lw=1)
    axes[-1].annotate(" requests end; the last passes finish", (end, 0.04), xycoords=("data", "axes fraction"),
                      va="bottom", fontsize=8)


def save(fig, outdir, name):
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return name


def note(ax, text):
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.4")


def plot_throughput(run, outdir, label):
    # Only while requests ran (mixed samples on while its last passes finish).
    n = len(series(run, "sec"))
    end = run.get("mixed", {}).get("requests_end_sec")
    if end is not None:
        n = min(n, end + 1)
    secs = series(run, "sec")[:n]
    cur = [x if x is not None else 0 for x in series(run, "cur_mb_s")[:n]]
    avg = series(run, "avg_mb_s")[:n]
    iops = [x if x is not None else 0 for x in series(run, "iops")[:n]]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    a1.plot(secs, cur, marker="o", ms=3, label="cur MB/s (each second)")
    a1.plot(secs, avg, ls="--", label="avg MB/s (since start)")
    raw = run.get("raw_ceiling")
    if raw:
        a1.axhline(raw["mb_s"], color="tab:red", ls=":",
                   label="raw device ceiling %.0f MB/s (%s, %d in flight)"
                   % (raw["mb_s"], raw.get("op", ""), raw["queue_depth"]))
    a1.set_ylabel("MB/s (2^20 B)")
    top = max(cur + avg + ([raw["mb_s"]] if raw else []) + [1])
    a1.set_ylim(0, top * 1.15)
    a1.legend(loc="best", fontsize=8)
    a1.set_title("%s: bandwidth and IOPS, %d in flight" % (label, run["options"]["concurrent_ios"]))
    a2.plot(secs, iops, marker="o", ms=3, color="tab:green")
    a2.set_ylabel("IOPS")
    a2.set_xlabel("seconds")
    a2.set_ylim(bottom=0)
    for a in (a1, a2):
        a.grid(alpha=0.3)
    return save(fig, outdir, label + "-throughput.png")


def plot_latency_cdf(run, outdir, label):
    cdf = run.get("latency_cdf", [])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if cdf:
        xs = [max(p[0], 1e-7) * 1e3 for p in cdf]
        ys = [p[1] for p in cdf]
        ax.step(xs, ys, where="post")
        ax.set_xscale("log")
        pct = run["latency_percentiles"]
        for name, color in (("p50", "tab:green"), ("p90", "tab:orange"), ("p99", "tab:red"), ("p99.9", "tab:purple")):
            v = pct[name] * 1e3
            ax.axvline(v, color=color, ls=":", label="%s %.3f ms" % (name, v))
        ax.legend(loc="lower right", fontsize=8)
    else:
        note(ax, "no operations completed")
    ax.set_xlabel("operation latency (ms, log scale)")
    ax.set_ylabel("fraction of operations")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3, which="both")
    ax.set_title("%s: latency CDF (%d operations)" % (label, ops_made(run)))
    return save(fig, outdir, label + "-latency-cdf.png")


def plot_tiers(run, outdir, label):
    secs = series(run, "sec")
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    for tier, color in (("ssd", "tab:blue"), ("hdd", "tab:brown")):
        used = gauge_series(run, tier + "_bytes_used")
        objs = gauge_series(run, tier + "_objects")
        if used:
            a1.plot(secs[:len(used)], [u / MIB for u in used], color=color, label=tier.upper())
        if objs:
            a2.plot(secs[:len(objs)], objs, color=color, label=tier.upper())
    a1.set_ylabel("MiB allocated")
    a2.set_ylabel("objects (by tier holding most of their data)")
    a2.set_xlabel("seconds")
    for a in (a1, a2):
        a.set_ylim(bottom=0)
        a.grid(alpha=0.3)
        a.legend(loc="upper left", fontsize=8)
    a1.set_title("%s: bytes and objects per tier" % label)
    mark_requests_end(run, (a1, a2))
    return save(fig, outdir, label + "-tiers.png")


def plot_tiering(run, outdir, label):
    secs = series(run, "sec")
    up = perf_series(run, "migrate_up_ops")
    down = perf_series(run, "migrate_down_ops")
    passes = perf_series(run, "migration_passes")
    cleaned = perf_series(run, "cleaner_bytes_moved")
    cpasses = perf_series(run, "cleaner_passes")
    free_eu = gauge_series(run, "ssd_free_erase_units")
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    if up:
        a1.plot(secs[:len(up)], up, color="tab:green", label="promoted to SSD (objects)")
        a1.plot(secs[:len(down)], down, color="tab:red", label="demoted to HDD (objects)")
        for i in range(1, len(passes)):
            if passes[i] > passes[i - 1]:
                a1.axvline(secs[i], color="0.6", ls=":", lw=1)
    if not any(up) and not any(down):
        note(a1, "no migrations during this run")
    a1.set_ylabel("objects moved (cumulative)")
    a1.set_title("%s: migrations (dotted: a pass ended) and SSD cleaning" % label)
    if cleaned:
        a2.plot(secs[:len(cleaned)], [c / MIB for c in cleaned], color="tab:purple",
                label="cleaner: MiB relocated (cumulative)")
    if not any(cleaned) and not any(cpasses):
        note(a2, "no SSD cleaning during this run")
    a2.set_ylabel("MiB relocated")
    a2.set_xlabel("seconds")
    if free_eu and any(free_eu):
        t = a2.twinx()
        t.plot(secs[:len(free_eu)], free_eu, color="0.5", ls="--", label="free SSD erase units")
        t.set_ylabel("free erase units")
        t.set_ylim(0, max(free_eu) * 1.15)
        t.legend(loc="lower right", fontsize=8)
    mark_requests_end(run, (a1, a2))
    for a in (a1, a2):
        a.set_ylim(bottom=0)
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[0]:
            a.legend(loc="upper left", fontsize=8)
    return save(fig, outdir, label + "-tiering.png")


def plot_nand(run, outdir, label):
    counts = run.get("nand", {}).get("erase_counts")
    if not counts:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.bar(range(len(counts)), counts, width=1.0, color="tab:orange")
    ax.set_xlabel("physical erase block")
    ax.set_ylabel("erase count")
    ax.set_xlim(-0.5, len(counts) - 0.5)
    ax.set_title("%s: NAND erase counts per block (min %d, max %d, mean %.1f)"
                 % (label, min(counts), max(counts), sum(counts) / len(counts)))
    ax.grid(alpha=0.3, axis="y")
    return save(fig, outdir, label + "-nand-erases.png")


SUMMARY_ROWS = [
    ("Total time run", "total_time_run", "%.3f s"),
    ("Total writes made", "total_writes_made", "%d"),
    ("Total reads made", "total_reads_made", "%d"),
    ("Total ops made", "total_ops_made", "%d"),
    ("Write size", "write_size", "%d"),
    ("Read size", "read_size", "%d"),
    ("Op size", "op_size", "%d"),
    ("Object size", "object_size", "%d"),
    ("Bandwidth (MB/sec)", "bandwidth", "%.2f"),
    ("Stddev Bandwidth", "stddev_bandwidth", "%.2f"),
    ("Max bandwidth (MB/sec)", "max_bandwidth", "%.2f"),
    ("Min bandwidth (MB/sec)", "min_bandwidth", "%.2f"),
    ("Average IOPS", "average_iops", "%d"),
    ("Stddev IOPS", "stddev_iops", "%.2f"),
    ("Max IOPS", "max_iops", "%d"),
    ("Min IOPS", "min_iops", "%d"),
    ("Average Latency(s)", "average_latency", "%.6f"),
    ("Stddev Latency(s)", "stddev_latency", "%.6f"),
    ("Max latency(s)", "max_latency", "%.6f"),
    ("Min latency(s)", "min_latency", "%.6f"),
    ("CPU per op (us)", "cpu_us_per_op", "%.1f"),
    ("Verification errors", "verify_errors", "%d"),
]


def summary_table(run):
    s = run["summary"]
    rows = []
    for name, key, fmt in SUMMARY_ROWS:
        if key not in s:
            continue
        v = s[key]
        text = "mixed" if key.endswith("_size") and v == 0 else fmt % v
        rows.append((name, text))
    raw = run.get("raw_ceiling")
    if raw:
        size = "mixed-size (%s)" % raw["sizes"] if raw.get("sizes") else "%d-byte" % raw["block_size"]
        rows.append(("Raw ceiling (MB/sec)", "%.2f (%s %ss, %d in flight, %s)"
                     % (raw["mb_s"], size, raw.get("op", "write"), raw["queue_depth"], raw["backend"])))
        rows.append(("Store / raw ceiling", "%.3f" % run["store_over_raw"]))
    elif run.get("raw_ceiling_note"):
        rows.append(("Raw ceiling", "not measured: " + run["raw_ceiling_note"]))
    for p, v in run["latency_percentiles"].items():
        rows.append(("Latency %s (s)" % p, "%.6f" % v))
    mixed = run.get("mixed")
    if mixed:
        rows.append(("Workload", "%s: %d files, %d reads, %d writes, %d metadata ops"
                     % (mixed["profile"], mixed["files"], mixed["reads"], mixed["writes"], mixed["metadata_ops"])))
        rows.append(("Migration passes", "%d: promoted %d, demoted %d, %d bytes"
                     % (mixed["migration_passes"], mixed["promoted"], mixed["demoted"], mixed["migrated_bytes"])))
    return "\n".join("<tr><th>%s</th><td>%s</td></tr>" % (html.escape(a), html.escape(b)) for a, b in rows)


def perf_table(run):
    delta = run.get("perf", {}).get("delta", {}).get("hybridstore", {})
    rows = []
    for name, v in delta.items():
        if isinstance(v, dict):
            if not v["avgcount"]:
                continue
            text = "%d samples, mean %.3f ms" % (v["avgcount"], 1e3 * v["avgtime"])
        else:
            if not v:
                continue
            text = "%d" % v
        rows.append("<tr><th>%s</th><td>%s</td></tr>" % (html.escape(name), html.escape(text)))
    return "\n".join(rows) or "<tr><td>no counter moved</td></tr>"


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    sections = []
    seen = {}
    for path in argv[2:]:
        with open(path) as f:
            run = json.load(f)
        if run.get("schema") != "hybridstore-bench/1":
            sys.stderr.write("%s: not a hybridstore-bench/1 record\n" % path)
            return 1
        label = label_of(run)
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = "%s-%d" % (label, seen[label])
        images = [plot_throughput(run, outdir, label), plot_latency_cdf(run, outdir, label),
                  plot_tiers(run, outdir, label), plot_tiering(run, outdir, label), plot_nand(run, outdir, label)]
        imgs = "\n".join('<img src="%s" alt="%s">' % (i, i) for i in images if i)
        load = run.get("machine", {}).get("loadavg", [0, 0, 0])
        sections.append("""<h2>%s</h2>
<p><code>%s</code><br>%s, %d CPUs, load average %.1f %.1f %.1f, store %s, seed %d</p>
<table>%s</table>
%s
<details><summary>perf counter deltas</summary><table>%s</table></details>""" % (
            html.escape(label), html.escape(run.get("command", "")), html.escape(run.get("date", "")),
            run.get("machine", {}).get("cpus", 0), load[0], load[1], load[2],
            html.escape(run["store"]["path"]), run.get("seed", 0), summary_table(run), imgs, perf_table(run)))
    page = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>hybridstore-bench report</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 1000px; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-size: 90%%; }
th { background: #f4f4f4; font-weight: normal; }
img { display: block; margin: 1em 0; max-width: 100%%; }
</style></head><body>
<h1>hybridstore-bench report</h1>
%s
</body></html>
""" % "\n".join(sections)
    with open(os.path.join(outdir, "index.html.tmp"), "w") as f:
        f.write(page)
    os.replace(os.path.join(outdir, "index.html.tmp"), os.path.join(outdir, "index.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
