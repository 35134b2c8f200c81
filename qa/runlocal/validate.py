"""qa/validate-suites: checks every suite the way teuthology will read it.

  - every YAML fragment under qa/ parses to a mapping (or is empty);
  - every symlink resolves, and the `.qa` links form the chain teuthology
    suites rely on (qa/suites/.qa -> ../, every directory below: .qa -> ../.qa/);
  - every suite and sub-suite builds its matrix (teuthology's build_matrix)
    and merges every job (config_merge), with a bounded number of jobs;
  - every job has roles and tasks, every task is one the qa tree knows, and
    workunits named by a job exist and are executable;
  - every `hybridstore_*` key in a ceph conf override is an option of the
    engine's registry (src/hsoptions/options_*.cc), and every other
    key is an option Debian's ceph-conf knows;
  - which jobs the local runner can run here, and why the others are skipped.
Exit status 1 on any error.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

import yaml

from .context import OsdChoice
from .runner import job_tasks, skip_reason
from .suite import QA_DIR, SUITES_DIR, TOP_DIR, all_suites, load_jobs, suite_path
from .tasks import TASKS

# Upper bounds on jobs per suite: a suite that grows past its bound must be
# split or subset on purpose, not by accident.
JOB_CAPS = {"hybridstore": 30, "hybridstore/basic": 12, "hybridstore/thrash": 12,
            "hybridstore/standalone": 4}
DEFAULT_CAP = 50
# Tasks from Ceph's qa tree a suite here may use (the local runner honours
# the ones in its TASKS).
KNOWN_TASKS = set(TASKS) | {"ceph_objectstore_tool", "cbt"}
YAML_DIRS = ("objectstore", "clusters", "distros", "suites")


class Problems:
    def __init__(self):
        self.errors = []

    def add(self, text):
        self.errors.append(text)
        print("ERROR: " + text)


def check_yaml(problems):
    n = 0
    for top in YAML_DIRS:
        for path in glob.glob(os.path.join(QA_DIR, top, "**", "*.yaml"), recursive=True):
            n += 1
            try:
                with open(path) as f:
                    data = yaml.safe_load(f)
            except (OSError, yaml.YAMLError) as e:
                problems.add("%s: %s" % (os.path.relpath(path, TOP_DIR), e))
                continue
            if data is not None and not isinstance(data, dict):
                problems.add("%s: not a mapping" % os.path.relpath(path, TOP_DIR))
    return n


def check_links(problems):
    n = 0
    for top in YAML_DIRS:
        for root, dirs, files in os.walk(os.path.join(QA_DIR, top), followlinks=False):
            for name in dirs + files:
                path = os.path.join(root, name)
                if os.path.islink(path):
                    n += 1
                    if not os.path.exists(path):
                        problems.add("broken link %s -> %s" % (os.path.relpath(path, TOP_DIR), os.readlink(path)))
    if os.readlink(os.path.join(SUITES_DIR, ".qa")) not in ("../", ".."):
        problems.add("qa/suites/.qa must link to ../")
    for root, dirs, _ in os.walk(SUITES_DIR, followlinks=False):
        if root == SUITES_DIR:
            continue
        link = os.path.join(root, ".qa")
        if not os.path.islink(link) or os.readlink(link) != "../.qa/":
            problems.add("%s has no .qa -> ../.qa/ link" % os.path.relpath(root, TOP_DIR))
        elif os.path.realpath(link) != os.path.realpath(QA_DIR):
            problems.add("%s/.qa does not lead to qa/" % os.path.relpath(root, TOP_DIR))
    return n


def engine_options():
    names = set()
    for path in glob.glob(os.path.join(TOP_DIR, "src", "hsoptions", "options_*.cc")):
        with open(path) as f:
            names.update(re.findall(r'"(hybridstore_[a-z0-9_]+)"', f.read()))
    return names


def conf_keys(config):
    conf = ((config.get("overrides") or {}).get("ceph") or {}).get("conf") or {}
    for name, cfg in job_tasks(config):
        if name == "ceph" and cfg:
            conf = cfg.get("conf") or {}
    for section, keys in conf.items():
        for key in (keys or {}):
            yield section, key


def check_conf_keys(problems, keys):
    engine = engine_options()
    if not engine:
        problems.add("no hybridstore_* options found under src/hsoptions")
    ceph_conf = shutil.which("ceph-conf")
    checked = 0
    for section, key in sorted(keys):
        norm = re.sub(r"[ _]+", "_", key.strip())
        if norm.startswith("hybridstore_"):
            if norm not in engine:
                problems.add("conf [%s] %s: not an option of the engine" % (section, key))
            checked += 1
        elif ceph_conf:
            p = subprocess.run([ceph_conf, "-c", "/dev/null", "--show-config-value", norm],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if p.returncode != 0:
                problems.add("conf [%s] %s: not an option of Ceph (ceph-conf does not know it)" % (section, key))
            checked += 1
    return checked, bool(ceph_conf)


def check_job(problems, job):
    cfg = job.config
    if not cfg.get("roles"):
        problems.add("%s: no roles" % job.description)
    try:
        tasks = job_tasks(cfg)
    except ValueError as e:
        problems.add("%s: %s" % (job.description, e))
        return
    if not tasks:
        problems.add("%s: no tasks" % job.description)
    for name, tcfg in tasks:
        if name not in KNOWN_TASKS:
            problems.add("%s: unknown task %s" % (job.description, name))
        if name == "workunit":
            basedir = (tcfg or {}).get("basedir", "qa/workunits")
            for paths in ((tcfg or {}).get("clients") or {}).values():
                for p in paths:
                    full = os.path.join(TOP_DIR, basedir, p)
                    if not (os.path.isdir(full) or os.access(full, os.X_OK)):
                        problems.add("%s: workunit %s/%s missing or not executable" % (job.description, basedir, p))


def main(argv=None):
    p = argparse.ArgumentParser(prog="qa/validate-suites", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suites", nargs="*", help="suites to check (default: all under qa/suites)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    problems = Problems()
    print("fragments: %d YAML files parsed" % check_yaml(problems))
    print("links: %d symlinks resolved, .qa chain checked" % check_links(problems))
    osd_choice = OsdChoice(None)
    keys = set()
    print("\n%-26s %5s %5s  %s" % ("SUITE", "JOBS", "CAP", "LOCAL RUNNER (no hybridstore ceph-osd given)"))
    for suite in args.suites or all_suites():
        suite_path(suite)
        try:
            jobs = load_jobs(suite, seed=args.seed)
        except Exception as e:  # teuthology raises many kinds on a bad suite
            problems.add("%s: matrix/merge failed: %s: %s" % (suite, type(e).__name__, e))
            continue
        cap = JOB_CAPS.get(suite, DEFAULT_CAP)
        if not jobs:
            problems.add("%s: no jobs" % suite)
        if len(jobs) > cap:
            problems.add("%s: %d jobs, more than its cap of %d" % (suite, len(jobs), cap))
        runnable, reasons = 0, {}
        for job in jobs:
            check_job(problems, job)
            keys.update(conf_keys(job.config))
            reason = skip_reason(job, osd_choice)
            if reason:
                reasons[reason] = reasons.get(reason, 0) + 1
            else:
                runnable += 1
        detail = "%d runnable" % runnable + "".join("; %d skipped: %s" % (n, r) for r, n in sorted(reasons.items()))
        print("%-26s %5d %5d  %s" % (suite, len(jobs), cap, detail))
    checked, have_ceph_conf = check_conf_keys(problems, keys)
    print("\nconf keys: %d checked%s" % (checked, "" if have_ceph_conf else
                                          " (ceph-conf missing: Ceph option names not checked)"))
    if problems.errors:
        print("\n%d problem(s)" % len(problems.errors))
        return 1
    print("all suites valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
