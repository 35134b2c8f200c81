"""qa/run-local: run a teuthology suite's jobs on this machine.

Each job is the merge of its fragments (teuthology's own build_matrix and
config_merge). Its tasks run in order as context managers, with each task's
`overrides` merged in, and are left in reverse order, as teuthology does.
Jobs whose tasks this runner cannot honour completely are skipped with the
reason; hybridstore jobs are skipped when no hybridstore-capable ceph-osd is
given. The summary lists every job as passed, failed or skipped.
"""
import argparse
import contextlib
import copy
import json
import os
import signal
import sys
import time

import yaml

from .context import JobContext, OsdChoice, TaskFailed, TaskSkipped
from .suite import TOP_DIR, load_jobs, parse_subset, split_words
from .tasks import TASKS, Ceph


def deep_merge(a, b):
    """teuthology's merge: b into a; dicts merge, lists append, scalars replace."""
    if b is None:
        return a
    if a is None:
        return copy.deepcopy(b)
    if isinstance(a, dict) and isinstance(b, dict):
        for k, v in b.items():
            a[k] = deep_merge(a.get(k), v)
        return a
    if isinstance(a, list) and isinstance(b, list):
        return a + copy.deepcopy(b)
    return copy.deepcopy(b)


def job_tasks(config):
    """[(name, config with its overrides merged)] or raises ValueError."""
    overrides = config.get("overrides") or {}
    out = []
    for entry in config.get("tasks") or []:
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ValueError("task entry %r is not a single-key mapping" % (entry,))
        (name, cfg), = entry.items()
        cfg = copy.deepcopy(cfg)
        if name in overrides:
            cfg = deep_merge(cfg if cfg is not None else {}, overrides[name])
        out.append((name, cfg))
    return out


def skip_reason(job, osd_choice):
    """Why a job cannot run here at all, or None."""
    try:
        tasks = job_tasks(job.config)
    except ValueError as e:
        return str(e)
    if not tasks:
        return "no tasks"
    for name, cfg in tasks:
        task = TASKS.get(name)
        if task is None:
            return "unsupported task %s" % name
        reason = task.unsupported(cfg, job.config)
        if reason:
            return reason
    for name, cfg in tasks:
        if name == "ceph":
            reason = osd_choice.skip_reason(Ceph.objectstore_of(cfg))
            if reason:
                return reason
    return None


def job_slug(job):
    parts = [p.split("/")[-1] for p in job.paths]
    return "%03d-%s" % (job.index, "-".join(os.path.splitext(p)[0] for p in parts[-3:]))[:80]


def shown(path):
    """A path relative to the working directory when it is below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def run_job(job, args, osd_choice, archive):
    """Runs one job; returns (status, seconds, detail)."""
    start = time.monotonic()
    jobdir = os.path.join(archive, job_slug(job))
    os.makedirs(jobdir, exist_ok=True)
    with open(os.path.join(jobdir, "config.yaml"), "w") as f:
        yaml.safe_dump({"description": job.description, "fragments": job.paths, **job.config}, f,
                       default_flow_style=False)
    with open(os.path.join(jobdir, "runlocal.log"), "w+") as log:
        ctx = JobContext(job, jobdir, jobdir, osd_choice, args.devices, args.seed * 1000 + job.index, log)
        status, detail = "passed", ""
        try:
            with contextlib.ExitStack() as stack:
                for name, cfg in job_tasks(job.config):
                    ctx.say("task %s: %s" % (name, json.dumps(cfg, default=str)))
                    stack.enter_context(TASKS[name].run(ctx, cfg))
        except TaskSkipped as e:
            status, detail = "skipped", str(e)
        except TaskFailed as e:
            status, detail = "FAILED", str(e)
        except Exception as e:  # a bug here must fail the job, never pass it
            status, detail = "FAILED", "%s: %s" % (type(e).__name__, e)
        ctx.say("job %s: %s" % (status, detail))
        if status == "passed":
            detail = "; ".join(n for n in ctx.notes if n.startswith("ceph:")) or "; ".join(ctx.notes)
        elif status == "FAILED":
            detail += " (log: %s)" % shown(log.name)
    return status, time.monotonic() - start, detail


def print_summary(rows, out=None):
    out = out or sys.stdout
    out.write("\n%-4s %-8s %7s  %s\n" % ("#", "RESULT", "SECONDS", "JOB / DETAIL"))
    for job, status, seconds, detail in rows:
        out.write("%-4d %-8s %7.0f  %s\n" % (job.index, status, seconds, job.description))
        if detail:
            out.write("%-4s %-8s %7s    %s\n" % ("", "", "", detail))
    counts = {s: sum(1 for r in rows if r[1] == s) for s in ("passed", "FAILED", "skipped")}
    out.write("%d jobs: %d passed, %d failed, %d skipped\n" % (
        len(rows), counts["passed"], counts["FAILED"], counts["skipped"]))
    return counts


def interrupted(signum, frame):
    # Once: the cleanup that the exception starts must not be interrupted too.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt("signal %d" % signum)


def given_ceph_osd(args):
    if args.ceph_osd:
        return args.ceph_osd
    if os.environ.get("CEPH_OSD"):
        return os.environ["CEPH_OSD"]
    if os.environ.get("CEPH_BUILD"):
        return os.path.join(os.environ["CEPH_BUILD"], "bin", "ceph-osd")
    return None


def parse_args(argv):
    p = argparse.ArgumentParser(prog="qa/run-local", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", help="suite under qa/suites (e.g. hybridstore/basic) or a path")
    p.add_argument("--subset", help="i/n: run the i-th of n parts of the matrix (as teuthology-suite)")
    p.add_argument("--seed", type=int, default=1, help="seed of the matrix's random choices and of the workloads")
    p.add_argument("--filter", help="only jobs whose description or fragments contain one of these (comma-separated)")
    p.add_argument("--filter-all", help="only jobs that contain every one of these (comma-separated)")
    p.add_argument("--filter-out", help="drop jobs that contain one of these (comma-separated)")
    p.add_argument("--limit", type=int, default=0, help="at most this many jobs")
    p.add_argument("--ceph-osd", help="the hybridstore-capable ceph-osd (default: $CEPH_OSD, $CEPH_BUILD/bin/ceph-osd)")
    p.add_argument("--devices", choices=("file", "loop"), help="OSD devices (default: the job's hybridstore task)")
    p.add_argument("--archive", help="directory for job logs (default build/qa-local/<suite>-<time>)")
    p.add_argument("--list", action="store_true", help="list the jobs and whether each can run here; run nothing")
    args = p.parse_args(argv)
    try:
        args.subset = parse_subset(args.subset)
    except ValueError as e:
        p.error(str(e))
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    jobs = load_jobs(args.suite, subset=args.subset, seed=args.seed, filter_any=split_words(args.filter),
                     filter_all=split_words(args.filter_all), filter_out=split_words(args.filter_out),
                     limit=args.limit, isolated=True)
    # A TERM (a CI timeout) unwinds like ^C: every task's cleanup runs, so
    # daemons stop and loop devices are detached.
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    osd_choice = OsdChoice(given_ceph_osd(args))
    if not jobs:
        print("no jobs selected")
        return 1
    if args.list:
        for job in jobs:
            reason = skip_reason(job, osd_choice)
            print("%-4d %-8s %s%s" % (job.index, "skip" if reason else "run", job.description,
                                      ("\n              " + reason) if reason else ""))
        return 0
    archive = args.archive or os.path.join(
        TOP_DIR, "build", "qa-local", "%s-%s" % (args.suite.strip("/").replace("/", "-"),
                                                 time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(archive, exist_ok=True)
    print("qa/run-local: %d jobs of %s%s; ceph-osd for hybridstore: %s; logs in %s" % (
        len(jobs), args.suite, " (subset %d/%d)" % args.subset if args.subset else "",
        osd_choice.given or "none given", archive))
    rows = []
    interrupted_at = None
    for job in jobs:
        reason = skip_reason(job, osd_choice)
        if reason:
            rows.append((job, "skipped", 0.0, reason))
            print("[%d] skipped: %s" % (job.index, job.description))
            continue
        print("[%d] running: %s" % (job.index, job.description), flush=True)
        try:
            status, seconds, detail = run_job(job, args, osd_choice, archive)
        except KeyboardInterrupt:  # the job's tasks have been unwound
            rows.append((job, "FAILED", 0.0, "interrupted"))
            interrupted_at = job.index
            break
        print("[%d] %s in %.0fs%s" % (job.index, status, seconds, (": " + detail) if status != "passed" else ""),
              flush=True)
        rows.append((job, status, seconds, detail))
    counts = print_summary(rows)
    if interrupted_at is not None:
        print("interrupted during job %d; the jobs after it did not run" % interrupted_at)
        return 130
    with open(os.path.join(archive, "summary.json"), "w") as f:
        json.dump([{"index": j.index, "description": j.description, "result": s, "seconds": round(t, 1),
                    "detail": d} for j, s, t, d in rows], f, indent=1)
    return 1 if counts["FAILED"] else 0
