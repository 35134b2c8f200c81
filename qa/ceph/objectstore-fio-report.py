#!/usr/bin/env python3
"""Figures of qa/ceph/objectstore-fio.sh: one run's, and the whole report.

  objectstore-fio-report.py run RUNDIR
      reads RUNDIR/fio.json (the measured job, `measure`) and RUNDIR/cpu.marks
      (the fio process's CPU ticks at the measured job's start and end),
      writes RUNDIR/metrics.json and prints one line; exits 1 when the run
      has no result (fio failed, the store failed, or no measured job).
  objectstore-fio-report.py report OUTDIR
      reads OUTDIR/meta.json and every OUTDIR/runs/ROW/STORE-REP/metrics.json,
      writes OUTDIR/results.json, OUTDIR/REPORT.md and OUTDIR/objectstore-fio.png
      (when matplotlib imports), and prints the table.

Figures: IOPS and MB/s of the measured job (all its threads); p50 and p99
latency from issue to completion (fio's lat; its clat is kept in
metrics.json, but the engine's reads complete inside the submit call, where
clat is about zero); CPU per op = the fio process's user+sys
time (every thread: fio's and the store's) from the measured job's start to
its end, over the ops it completed. Each store's figure is the median of its
repeats; the ratio is hybridstore / bluestore of the medians.
"""
import json
import os
import statistics
import sys

STORES = ("hybridstore", "bluestore")
METRICS = ("iops", "mbs", "p50_us", "p99_us", "cpu_us_per_op", "cpu_cores")


def load_fio_json(path):
    """fio's JSON, after any lines fio printed before it (exec_prerun notes)."""
    with open(path, errors="replace") as f:
        text = f.read()
    start = text.find("\n{")
    start = 0 if text.startswith("{") else (start + 1 if start >= 0 else -1)
    if start < 0:
        raise ValueError(f"{path}: no JSON object")
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    return obj


def read_marks(path, clk_tck):
    starts, ends = [], []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) != 3:
                    continue
                (starts if p[0] == "start" else ends).append((float(p[1]), int(p[2])))
    except OSError:
        return None
    if not starts or not ends:
        return None
    t0, c0 = min(starts)
    t1, c1 = max(ends)
    if t1 <= t0:
        return None
    return {"cpu_s": (c1 - c0) / clk_tck, "wall_s": t1 - t0}


def run_metrics(rundir):
    meta_path = os.path.join(rundir, "run.json")
    with open(meta_path) as f:
        m = json.load(f)
    m["status"] = "failed"
    fio_path = os.path.join(rundir, "fio.json")
    try:
        j = load_fio_json(fio_path)
    except (OSError, ValueError) as e:
        m["why"] = f"no fio result ({e})"
        return m
    jobs = [x for x in j.get("jobs", []) if x.get("jobname") == "measure"]
    if not jobs:
        m["why"] = "no `measure` job in fio's output"
        return m
    job = jobs[0]
    if job.get("error"):
        m["why"] = f"fio job error {job['error']}"
        return m
    d = "write" if job["write"]["total_ios"] > 0 else "read"
    s = job[d]
    ops = job["read"]["total_ios"] + job["write"]["total_ios"]
    if ops <= 0:
        m["why"] = "the measured job completed no operation"
        return m
    # The whole latency (issue to completion, lat_percentiles=1 in the job
    # files): a read completes inside the submit call, where clat is ~0.
    pct = s.get("lat_ns", {}).get("percentile", {}) or s.get("clat_ns", {}).get("percentile", {})
    cpct = s.get("clat_ns", {}).get("percentile", {})
    m.update({
        "dir": d,
        "ops": ops,
        "iops": s["iops"],
        "mbs": s["bw_bytes"] / 1e6,
        "p50_us": pct.get("50.000000", 0) / 1e3,
        "p99_us": pct.get("99.000000", 0) / 1e3,
        "lat_mean_us": s.get("lat_ns", {}).get("mean", 0) / 1e3,
        "clat_p50_us": cpct.get("50.000000", 0) / 1e3,
        "clat_p99_us": cpct.get("99.000000", 0) / 1e3,
        "runtime_s": s.get("runtime", 0) / 1e3,
    })
    cpu = read_marks(os.path.join(rundir, "cpu.marks"), m.get("clk_tck", 100))
    if cpu:
        m["cpu_s"] = cpu["cpu_s"]
        m["cpu_wall_s"] = cpu["wall_s"]
        m["cpu_us_per_op"] = cpu["cpu_s"] * 1e6 / ops
        m["cpu_cores"] = cpu["cpu_s"] / cpu["wall_s"]
    else:
        m["cpu_note"] = "no CPU marks (exec_prerun/exec_postrun did not run)"
    target = m.get("runtime_target_s", 0)
    if target and m["runtime_s"] < 0.8 * target:
        m["short"] = (f"ran {m['runtime_s']:.1f} s of {target} s: a thread used up its objects "
                      "(raise HS_FIO_NEW_OBJECTS or HS_FIO_DATASET)")
    m["status"] = "ok"
    return m


def fmt(v, digits=0):
    if v is None:
        return "-"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def cmd_run(rundir):
    m = run_metrics(rundir)
    with open(os.path.join(rundir, "metrics.json"), "w") as f:
        json.dump(m, f, indent=1, sort_keys=True)
    tag = f"{m.get('row')} {m.get('store')} #{m.get('rep')}"
    if m["status"] != "ok":
        print(f"{tag}: FAILED: {m.get('why')}")
        return 1
    cpu = (f"CPU {m['cpu_us_per_op']:.1f} us/op ({m['cpu_cores']:.2f} cores)"
           if "cpu_us_per_op" in m else "CPU -")
    print(f"{tag}: {m['iops']:,.0f} IOPS, {m['mbs']:,.1f} MB/s, p50 {m['p50_us']:,.0f} us, "
          f"p99 {m['p99_us']:,.0f} us, {cpu}, {m['runtime_s']:.1f} s, load {m.get('load_start', '?')}"
          + (f"  [{m['short']}]" if "short" in m else ""))
    return 0


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratio(h, b):
    if h is None or b is None or b == 0:
        return None
    return h / b


def collect(outdir):
    with open(os.path.join(outdir, "meta.json")) as f:
        meta = json.load(f)
    rows = []
    for spec in meta["rows"]:
        name = spec["name"]
        entry = dict(spec)
        entry["stores"] = {}
        for store in meta["stores"]:
            runs = []
            rdir = os.path.join(outdir, "runs", name)
            for rep in range(1, meta["repeats"] + 1):
                p = os.path.join(rdir, f"{store}-{rep}", "metrics.json")
                if os.path.exists(p):
                    with open(p) as f:
                        runs.append(json.load(f))
            ok = [r for r in runs if r.get("status") == "ok"]
            med = {k: median([r.get(k) for r in ok]) for k in METRICS}
            entry["stores"][store] = {
                "runs": runs, "ok": len(ok), "failed": len(runs) - len(ok), "median": med,
                "short": [r["short"] for r in ok if "short" in r],
            }
        if all(s in entry["stores"] for s in STORES):
            h = entry["stores"]["hybridstore"]["median"]
            b = entry["stores"]["bluestore"]["median"]
            entry["ratio"] = {k: ratio(h[k], b[k]) for k in METRICS}
        rows.append(entry)
    return meta, rows


def table(meta, rows):
    head = ("| row | pglog | IOPS h | IOPS b | IOPS h/b | MB/s h | MB/s b | p50 us h | p50 us b "
            "| p99 us h | p99 us b | p99 h/b | CPU us/op h | CPU us/op b | CPU h/b | runs h/b |")
    sep = "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"
    lines = [head, sep]
    for r in rows:
        st = r["stores"]
        h = st.get("hybridstore", {}).get("median", {})
        b = st.get("bluestore", {}).get("median", {})
        ra = r.get("ratio", {})
        runs = "/".join(f"{st[s]['ok']}" + (f"(+{st[s]['failed']} failed)" if st[s]["failed"] else "")
                        for s in STORES if s in st)
        lines.append("| " + " | ".join([
            r["name"], "on" if r.get("pglog") == "1" else ("-" if r.get("pglog") == "-" else "off"),
            fmt(h.get("iops")), fmt(b.get("iops")), fmt(ra.get("iops"), 2),
            fmt(h.get("mbs"), 1), fmt(b.get("mbs"), 1),
            fmt(h.get("p50_us")), fmt(b.get("p50_us")),
            fmt(h.get("p99_us")), fmt(b.get("p99_us")), fmt(ra.get("p99_us"), 2),
            fmt(h.get("cpu_us_per_op"), 1), fmt(b.get("cpu_us_per_op"), 1), fmt(ra.get("cpu_us_per_op"), 2),
            runs]) + " |")
    return "\n".join(lines)


def plot(outdir, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"no plot: matplotlib does not import ({e})"
    names = [r["name"] for r in rows if "ratio" in r]
    if not names:
        return "no plot: no row ran on both stores"
    sel = [r for r in rows if "ratio" in r]
    x = list(range(len(names)))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(8, 0.7 * len(names) + 3), 9), sharex=True)
    w = 0.38
    for i, (store, color) in enumerate((("hybridstore", "tab:blue"), ("bluestore", "tab:orange"))):
        vals = [r["stores"][store]["median"]["iops"] or 0 for r in sel]
        ax1.bar([xi + (i - 0.5) * w for xi in x], vals, w, label=store, color=color)
    ax1.set_yscale("log")
    ax1.set_ylabel("IOPS (median of repeats)")
    ax1.legend()
    ax1.grid(axis="y", alpha=0.3)
    for i, (key, label, color) in enumerate((("iops", "IOPS", "tab:green"),
                                             ("cpu_us_per_op", "CPU per op", "tab:red"),
                                             ("p99_us", "p99 latency", "tab:purple"))):
        vals = [r["ratio"].get(key) or 0 for r in sel]
        ax2.bar([xi + (i - 1) * 0.27 for xi in x], vals, 0.27, label=label, color=color)
    ax2.axhline(1.0, color="black", lw=0.8)
    ax2.set_ylabel("hybridstore / bluestore")
    ax2.legend()
    ax2.grid(axis="y", alpha=0.3)
    ax2.set_xticks(x)
    ax2.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    fig.suptitle("fio ObjectStore engine: HybridStore against BlueStore (same devices)")
    fig.tight_layout()
    path = os.path.join(outdir, "objectstore-fio.png")
    fig.savefig(path, dpi=100)
    return None


def cmd_report(outdir):
    meta, rows = collect(outdir)
    tab = table(meta, rows)
    note = plot(outdir, rows)
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1, sort_keys=True)
    failed = []
    short = []
    for r in rows:
        for store, s in r["stores"].items():
            for run in s["runs"]:
                if run.get("status") != "ok":
                    failed.append(f"- {r['name']} {store} #{run.get('rep')}: {run.get('why')}"
                                  + (f"\n\n```\n{run['log_tail']}\n```" if run.get("log_tail") else ""))
            short += [f"- {r['name']} {store}: {x}" for x in s["short"]]
    md = ["# fio ObjectStore engine: HybridStore against BlueStore", "",
          f"Command: `{meta.get('command')}`", "",
          f"- Ceph build: {meta.get('ceph_build')} ({meta.get('ceph_release')}); fio {meta.get('fio_version')}",
          f"- Machine: {meta.get('nproc')} CPUs, {meta.get('kernel')}; load average at start "
          f"{meta.get('load_start')}, at end {meta.get('load_end', '?')} (shared machine: absolute figures are noisy)",
          f"- Devices: {meta.get('devices')}; SSD role {meta.get('ssd_size')}, HDD role {meta.get('hdd_size')}, "
          f"the same for both stores and fresh for every run (BlueStore: block on the HDD role, "
          f"block.db on the SSD role; HybridStore: its two tiers, RocksDB and the commit journal "
          f"{'in the data directory' if meta.get('kv_location') == 'directory' else 'on the SSD tier (the kvfs)'})",
          f"- Matrix {meta.get('matrix')}, {meta.get('repeats')} repeat(s) of each pair, stores alternated "
          f"(the order flips every repeat), {meta.get('runtime')} s measured a run; data set "
          f"{meta.get('dataset')} (4 MiB objects) for the rows on existing objects, up to "
          f"{meta.get('new_objects')} new 4 KiB objects for the create rows",
          f"- pglog on: pglog_simulation=1, oi_attr_len={meta.get('oi_attr_len')}, "
          f"snapset_attr_len={meta.get('snapset_attr_len')}, _fastinfo_omap_len={meta.get('fastinfo_len')}, "
          f"pglog_omap_len={meta.get('pglog_len')}, pglog_dup_omap_len={meta.get('pglog_dup_len')}; "
          "off: none of them. The create rows' pglog variant has no object attributes (the engine's "
          "setattrs precedes its write and fails on an object that does not exist yet, aborting "
          "either store); the sequential-write rows write into objects made empty at setup",
          f"- Wall time: {meta.get('seconds', '?')} s", "",
          "h = hybridstore, b = bluestore, medians of the repeats; ratios h/b of the medians. "
          "Rows: rw4k-exist = 4 KiB random writes into 4 MiB objects written whole first; rw4k-new = "
          "each 4 KiB write creates an object; rr4k = 4 KiB random reads; sw/sr = sequential writes/reads "
          "of 64 KiB or 4 MiB; qdN = writes in flight per thread (reads are synchronous in the engine); "
          "jN = threads, all over the same 8 collections.", "",
          tab, "",
          "Latency: fio's lat (issue to completion; a write's ends when the store reports it "
          "committed), percentiles from lat_percentiles=1. "
          "CPU per op: the fio process's user+sys time (all threads: fio's and the store's, "
          "including background work that ran in the window) from the measured job's start to its "
          "end (exec_prerun/exec_postrun), over the ops it completed. The engine waits for "
          "completions by polling every 100 us (usleep in its getevents): that bounds the latency "
          "figures' resolution, and a thread waiting for a slow commit spends CPU in fio, so at low "
          "queue depth CPU per op carries a polling share that grows with the store's latency. "
          "Reads: both stores keep the data they read in memory (BlueStore's cache, "
          "bluestore_default_buffered_read, on by default; HybridStore's data cache, "
          "hybridstore_data_cache_size, 1 GiB by default), so after the first pass they serve a "
          "data set of this size from memory. A data set beyond the caches (HS_FIO_DATASET) "
          "compares the read paths to the device.", ""]
    if note:
        md += [f"({note})", ""]
    else:
        md += ["![IOPS and ratios](objectstore-fio.png)", ""]
    if short:
        md += ["## Runs that ended early", ""] + short + [""]
    if failed:
        md += ["## Failed runs", ""] + failed + [""]
    with open(os.path.join(outdir, "REPORT.md"), "w") as f:
        f.write("\n".join(md))
    print(tab)
    if note:
        print(note)
    if failed:
        print(f"{len(failed)} run(s) failed (see REPORT.md)")
    return 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    if argv[1] == "run" and len(argv) == 3:
        return cmd_run(argv[2])
    if argv[1] == "report" and len(argv) == 3:
        return cmd_report(argv[2])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
