#!/usr/bin/env python3
"""Folds `perf script -F comm,ip,sym` output (a cpu-clock profile with call
graphs, -g) into CPU time per call of one process (RESULTS.md round 15).

  fold.py split COMM CALLS HZ < perf.txt
      what COMM's samples sit under: user code, a page fault, or a system
      call (by name), in ms of CPU per call
  fold.py under COMM FRAME CALLS HZ < perf.txt
      the callees of FRAME that COMM's samples pass through, in ms per call
  fold.py kinds CALLS HZ COMM... < perf.txt
      a table, one column per COMM: what of its CPU per call is the Go
      start-up, package inits, page faults, the runtime's own system calls,
      the system calls that do the call's work (netlink, /proc/sys, state
      files), other user code, and kernel work with no Go frame (exec, exit).
      COMM@DIR counts only COMM's samples with a frame in a binary under
      DIR, to tell two sets of binaries of the same names apart in one
      profile (`perf script -F comm,ip,sym,dso`; a sample with no user
      frame cannot be told apart and is left out)

CALLS is the number of calls the profile covers, HZ the sampling frequency
(perf record -F). Build the binaries without -s -w so that perf names Go
functions (scripts/build.sh with LDFLAGS unset).
"""
import collections
import re
import sys


def samples(stream, dsos=None):
    """Yields (comm, frames leaf first) for each sample; with dsos (a list),
    the binary of each frame goes into it, cleared per sample."""
    comm, frames = None, []
    for line in stream:
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
        elif not line[0].isspace():
            comm, frames = line.split()[0], []
            if dsos is not None:
                dsos.clear()
        else:
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                sym, _, dso = parts[1].rpartition(" (")
                frames.append(re.sub(r"\+0x[0-9a-f]+$", "", sym or parts[1]))
                if dsos is not None:
                    dsos.append(dso.rstrip(")"))
    if comm is not None:
        yield comm, frames


def category(frames):
    """The outermost system call or page fault a sample is under, else user."""
    for f in reversed(frames):
        m = re.match(r"__(?:x64|do)_sys_(\w+)", f)
        if m:
            return "syscall " + m.group(1)
        if f == "asm_exc_page_fault":
            return "page fault"
    return "user"


# System calls the Go runtime makes for itself (threads, memory, timers,
# signals, waiting): start-up and scheduling, not the call's work.
RUNTIME_SYSCALLS = {
    "arch_prctl", "clone", "clone3", "epoll_create1", "epoll_ctl", "epoll_pwait",
    "eventfd2", "execve", "exit", "exit_group", "fcntl", "futex", "getpid", "gettid",
    "madvise", "mmap", "mprotect", "munmap", "nanosleep", "pipe2", "prlimit64",
    "rt_sigaction", "rt_sigprocmask", "sched_getaffinity", "sched_yield",
    "sigaltstack", "tgkill", "uname",
}


def kind(frames):
    """What one sample of a Go process is: the rows of `kinds`."""
    if not any("runtime." in f or "/" in f or f.startswith("main.") for f in frames):
        return "kernel, no Go frame (exec, exit)"
    if "runtime.rt0_go.abi0" in frames:
        return "Go start-up (rt0_go)"
    if any(f.startswith("runtime.doInit") for f in frames):
        return "package inits"
    cat = category(frames)
    if cat == "page fault":
        return "page faults"
    if cat.startswith("syscall "):
        name = cat.split()[1]
        return "runtime's system calls" if name in RUNTIME_SYSCALLS else "the work's system calls"
    return "user code"


def kinds(argv):
    calls, hz, comms = float(argv[2]), float(argv[3]), argv[4:]
    per_call = 1000.0 / hz / calls
    count = {c: collections.Counter() for c in comms}
    dsos = []
    for c, frames in samples(sys.stdin, dsos):
        for col in comms:
            name, _, under = col.partition("@")
            if c == name and (not under or any(d.startswith(under) for d in dsos)):
                count[col][kind(frames)] += 1
    rows = sorted({k for c in count.values() for k in c})
    print(f"{'ms of CPU per call':34}" + "".join(f"{c[:11]:>12}" for c in comms))
    for r in rows + ["total"]:
        cells = (sum(count[c].values()) if r == "total" else count[c][r] for c in comms)
        print(f"{r:34}" + "".join(f"{n * per_call:12.2f}" for n in cells))


def main(argv):
    if len(argv) >= 5 and argv[1] == "kinds":
        return kinds(argv)
    if len(argv) == 5 and argv[1] == "split":
        comm, anchor, calls, hz = argv[2], None, float(argv[3]), float(argv[4])
    elif len(argv) == 6 and argv[1] == "under":
        comm, anchor, calls, hz = argv[2], argv[3], float(argv[4]), float(argv[5])
    else:
        sys.exit(__doc__)
    per_call = 1000.0 / hz / calls  # ms of CPU per sample, per call
    count, total = collections.Counter(), 0
    for c, frames in samples(sys.stdin):
        if c != comm:
            continue
        total += 1
        if anchor is None:
            count[category(frames)] += 1
        elif anchor in frames:
            i = frames.index(anchor)
            count[frames[i - 1] if i > 0 else anchor + " (itself)"] += 1
    print(f"{comm}: {total * per_call:.2f} ms of CPU per call")
    for key, n in count.most_common(25):
        print(f"  {n * per_call:7.3f}  {key}")


if __name__ == "__main__":
    main(sys.argv)
