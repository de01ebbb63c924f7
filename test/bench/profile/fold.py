#!/usr/bin/env python3
"""Folds `perf script -F comm,ip,sym` output (a cpu-clock profile with call
graphs, -g) into CPU time per call of one process (RESULTS.md round 15).

  fold.py split COMM CALLS HZ < perf.txt
      what COMM's samples sit under: user code, a page fault, or a system
      call (by name), in ms of CPU per call
  fold.py under COMM FRAME CALLS HZ < perf.txt
      the callees of FRAME that COMM's samples pass through, in ms per call

CALLS is the number of calls the profile covers, HZ the sampling frequency
(perf record -F). Build the binaries without -s -w so that perf names Go
functions (scripts/build.sh with LDFLAGS unset).
"""
import collections
import re
import sys


def samples(stream):
    """Yields (comm, frames leaf first) for each sample."""
    comm, frames = None, []
    for line in stream:
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
        elif not line[0].isspace():
            comm, frames = line.split()[0], []
        else:
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                frames.append(re.sub(r"\+0x[0-9a-f]+$", "", parts[1].rsplit(" (", 1)[0]))
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


def main(argv):
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
