"""Suites as teuthology sees them: the job matrix and the merged job configs.

Uses teuthology's own build_matrix and config_merge, so a suite that expands
here expands the same way in a lab.
"""
import json
import logging
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field

QA_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES_DIR = os.path.join(QA_DIR, "suites")
TOP_DIR = os.path.dirname(QA_DIR)


def quiet_teuthology():
    """teuthology warns about a missing ~/.teuthology.yaml on import; we need none."""
    logging.getLogger("teuthology").setLevel(logging.ERROR)
    logging.getLogger("teuthology.config").setLevel(logging.ERROR)


@dataclass
class Job:
    index: int
    description: str
    paths: list
    config: dict
    skip_reason: str = ""
    extra: dict = field(default_factory=dict)


def suite_path(suite):
    """'hybridstore/basic' or a path -> (absolute path, suite name)."""
    if os.path.isdir(suite):
        path = os.path.abspath(suite)
        rel = os.path.relpath(path, SUITES_DIR)
        name = rel if not rel.startswith("..") else os.path.basename(path)
        return path, name
    path = os.path.join(SUITES_DIR, suite)
    if not os.path.isdir(path):
        raise SystemExit("no suite %s (looked in %s)" % (suite, SUITES_DIR))
    return path, suite.strip("/")


def parse_subset(text):
    """'i/n' -> (i, n) with 0 <= i < n, as teuthology-suite --subset."""
    if not text:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError("subset must be i/n, got %r" % text)
    if n < 1 or not 0 <= i < n:
        raise ValueError("subset i/n needs 0 <= i < n, got %r" % text)
    return (i, n)


def matches(description, paths, words, every=False):
    """teuthology's --filter (any word) and --filter-all (every word) test."""
    haystacks = [description] + list(paths)
    hit = [any(w in h for h in haystacks) for w in words]
    return all(hit) if every else any(hit)


def split_words(text):
    return [w.strip() for w in (text or "").split(",") if w.strip()]


def load_jobs(suite, subset=None, seed=1, filter_any=None, filter_all=None, filter_out=None, limit=0,
              isolated=False):
    """The merged jobs of a suite, in teuthology's order, filtered like
    teuthology-suite filters them. With `isolated`, teuthology runs in a
    child process: importing it monkey-patches threads and time (gevent),
    which a process that then runs clusters and a thrasher must not have."""
    if isolated:
        argv = [sys.executable, "-m", "runlocal.suite", json.dumps({
            "suite": suite, "subset": subset, "seed": seed, "filter_any": filter_any,
            "filter_all": filter_all, "filter_out": filter_out, "limit": limit})]
        env = dict(os.environ, PYTHONPATH=QA_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.run(argv, stdout=subprocess.PIPE, env=env, text=True)
        if p.returncode != 0:
            raise SystemExit("could not build the jobs of %s" % suite)
        return [Job(**j) for j in json.loads(p.stdout)]
    quiet_teuthology()
    from teuthology.suite.build_matrix import build_matrix
    from teuthology.suite.merge import config_merge

    path, name = suite_path(suite)
    matrix = build_matrix(path, subset=subset, seed=seed)
    jobs = []
    for desc, paths, config in config_merge(matrix, suite_name=name, seed=seed):
        if filter_any and not matches(desc, paths, filter_any):
            continue
        if filter_all and not matches(desc, paths, filter_all, every=True):
            continue
        if filter_out and matches(desc, paths, filter_out):
            continue
        jobs.append(Job(len(jobs), desc, list(paths), config))
        if limit and len(jobs) >= limit:
            break
    return jobs


def all_suites():
    """Every directory under qa/suites that teuthology can schedule as a suite:
    the top suites and each of their sub-suites."""
    found = []
    for top in sorted(os.listdir(SUITES_DIR)):
        top_path = os.path.join(SUITES_DIR, top)
        if top.startswith(".") or not os.path.isdir(top_path):
            continue
        found.append(top)
        for sub in sorted(os.listdir(top_path)):
            if not sub.startswith(".") and os.path.isdir(os.path.join(top_path, sub)):
                found.append(top + "/" + sub)
    return found


if __name__ == "__main__":
    # The isolated half of load_jobs: jobs as JSON on stdout.
    kwargs = json.loads(sys.argv[1])
    if kwargs.get("subset"):
        kwargs["subset"] = tuple(kwargs["subset"])
    json.dump([asdict(j) for j in load_jobs(**kwargs)], sys.stdout)
