#!/usr/bin/env python3
"""Runs a check and fails it when it stops making progress.

usage: qa/watchdog.py [--idle SECONDS] [--name NAME] -- COMMAND [ARG...]

COMMAND runs in a process group of its own; its standard output and error
pass through as they come. When it has printed nothing for SECONDS (default
$HS_QA_IDLE, else 300), the watchdog prints the process tree of that group and
the stacks of every process in it (gdb -batch -ex 'thread apply all bt' -p
PID; the kernel stacks from /proc when gdb is missing), kills the group and
exits with 124, so a hang fails with its evidence instead of running into the
CI time limit. Otherwise it exits with COMMAND's status.
"""
import argparse
import os
import select
import shutil
import signal
import subprocess
import sys
import time


def group_pids(pgid):
    """Every live process whose process group is pgid, oldest first."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[2]) == pgid:  # fields: state, ppid, pgrp, ...
            pids.append(int(entry))
    return sorted(pids)


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def dump_stacks(pgid, out):
    out.write("watchdog: processes of the stuck check (process group %d):\n" % pgid)
    out.flush()
    subprocess.run(["ps", "-o", "pid,ppid,stat,etime,time,args", "-g", str(pgid)], stdout=out, stderr=out,
                   check=False)
    gdb = shutil.which("gdb")
    for pid in group_pids(pgid):
        out.write("\nwatchdog: ===== stacks of pid %d: %s\n" % (pid, cmdline(pid)))
        out.flush()
        if gdb:
            try:
                subprocess.run([gdb, "-batch", "-nx", "-p", str(pid), "-ex", "set pagination off",
                                "-ex", "thread apply all bt"], stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=120, check=False)
            except subprocess.TimeoutExpired:
                out.write("watchdog: gdb did not finish within 120 s\n")
            continue
        out.write("watchdog: gdb not found (make deps installs it); kernel stacks:\n")
        for tid in sorted(os.listdir("/proc/%d/task" % pid)):
            try:
                with open("/proc/%d/task/%s/stack" % (pid, tid)) as f:
                    stack = f.read()
            except OSError as e:
                stack = "(unreadable: %s)\n" % e
            out.write("-- thread %s\n%s" % (tid, stack))
    out.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--idle", type=float, default=float(os.environ.get("HS_QA_IDLE", "300")),
                    help="seconds without output after which the check counts as stuck")
    ap.add_argument("--name", default=None, help="what to call the check in messages")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command")
    name = a.name or " ".join(cmd)

    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    pgid = child.pid

    def forward_signal(signum, _frame):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, forward_signal)
    signal.signal(signal.SIGTERM, forward_signal)

    streams = {child.stdout.fileno(): sys.stdout.buffer, child.stderr.fileno(): sys.stderr.buffer}
    last = time.monotonic()
    while streams:
        left = a.idle - (time.monotonic() - last)
        ready = select.select(list(streams), [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            sys.stdout.flush()
            sys.stderr.write("\nwatchdog: %s printed nothing for %.0f s: stuck; its stacks follow\n" % (name, a.idle))
            dump_stacks(pgid, sys.stderr)
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()
            sys.stderr.write("watchdog: %s killed after %.0f s without output (HS_QA_IDLE sets the limit)\n"
                             % (name, a.idle))
            return 124
        for fd in ready:
            data = os.read(fd, 65536)
            if not data:
                del streams[fd]
                continue
            streams[fd].write(data)
            streams[fd].flush()
            last = time.monotonic()
    rc = child.wait()
    # Children the check left behind in its group would hold its devices.
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
