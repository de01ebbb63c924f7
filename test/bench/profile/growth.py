#!/usr/bin/env python3
"""Counts what one traced call did, from growth.sh's strace files: growth.py DIR N1 N2 ...

Per verb and step N: syscalls (all, and per command), netlink bytes received per protocol,
files opened per state directory (path parts holding digits folded to *), bytes read per
file class, directory listings (getdents64 bytes); with growth.sh's PERF=1, CPU ms per call
and perf samples per call (4 a ms) of each kernel function with its callees. Prints the counters that differ between
the first and the last step, which are the ones that grow with the pods on the node."""
import collections
import os
import re
import subprocess
import sys

LINE = re.compile(r'^(\d+)<([^>]*)> +(.*)$')
CALL = re.compile(r'^(\w+)\((.*)$')
RET = re.compile(r'\) += (-?\w+)')


# What the Go runtime's scheduler and signals do: their counts follow the machine's load
# (a busy CPU means more spinning, preemption signals and parked threads), not the work.
SCHED = {'nanosleep', 'futex', 'epoll_pwait', 'sched_yield', 'tgkill', 'getpid', 'gettid',
         'rt_sigreturn', 'rt_sigprocmask', 'sigaltstack', 'clone', 'clone3', 'mmap', 'munmap',
         'madvise', 'arch_prctl', 'set_robust_list', 'rseq'}


def fold(path):
    parts = []
    for p in path.split('/'):
        parts.append('*' if re.search(r'\d', p) and p not in ('ipv4', 'ipv6') else p)
    return '/'.join(parts)


class Trace:
    def __init__(self):
        self.c = collections.Counter()
        self.tgid = {}
        self.fds = {}        # (tgid, fd) -> netlink protocol
        self.pending = {}    # pid -> (name, args)

    def group(self, pid):
        return self.tgid.setdefault(pid, pid)

    def feed(self, line):
        m = LINE.match(line)
        if not m:
            return
        pid, comm, rest = int(m.group(1)), m.group(2), m.group(3)
        if rest.startswith('<...'):
            name = rest.split()[1]
            pname, args = self.pending.pop(pid, (name, ''))
            args += rest
        elif rest.startswith('+++') or rest.startswith('---'):
            return
        else:
            cm = CALL.match(rest)
            if not cm:
                return
            name, args = cm.group(1), cm.group(2)
            if args.endswith('<unfinished ...>'):
                self.pending[pid] = (name, args)
                return
        r = RET.search(args)
        ret = r.group(1) if r else '?'
        self.count(pid, comm, name, args, ret)

    def count(self, pid, comm, name, args, ret):
        c = self.c
        c['syscalls'] += 1
        c['syscall ' + name] += 1
        if name not in SCHED:
            c['syscalls but the Go scheduler\'s'] += 1
            c['syscalls but the Go scheduler\'s, by ' + comm] += 1
        g = self.group(pid)
        if name in ('clone', 'clone3', 'vfork', 'fork') and ret.isdigit():
            child = int(ret)
            self.tgid[child] = g if 'CLONE_THREAD' in args else child
        elif name == 'socket' and 'AF_NETLINK' in args:
            proto = re.search(r'NETLINK_\w+', args)
            fd = re.match(r'-?\d+', ret)
            if proto and fd:
                self.fds[(g, int(fd.group(0)))] = proto.group(0)[8:]
        elif name in ('recvmsg', 'recvfrom', 'sendmsg', 'sendto'):
            fd = int(args.split(',')[0], 16)
            proto = self.fds.get((g, fd), 'other')
            way = 'recv' if name.startswith('recv') else 'send'
            c['netlink %s %s calls' % (proto, way)] += 1
            if way == 'recv' and ret.startswith('0x'):
                c['netlink %s recv bytes' % proto] += int(ret, 16)
        elif name in ('openat', 'open') and not ret.startswith('-'):
            path = re.search(r'"([^"]*)"', args)
            if path:
                c['open ' + fold(path.group(1)).rsplit('/', 1)[0] + '/'] += 1
        elif name in ('read', 'pread64', 'getdents64') and ret.isdigit():
            path = re.match(r'\d+<([^>]*)>', args)
            what = fold(path.group(1)) if path else '?'
            if what.startswith('pipe:') or what.startswith('socket:'):
                return
            c['%s %s bytes' % (name, what)] += int(ret)
            if name == 'getdents64':
                c['getdents64 %s calls' % what] += 1


def load(path):
    t = Trace()
    with open(path, errors='replace') as f:
        for line in f:
            t.feed(line.rstrip('\n'))
    return t.c


KEEP = ('syscalls', "syscalls but the Go scheduler's", 'cpu ms per call')
PERF_RATE = 4000  # growth.sh's perf record -F
PERF_CALLS = int(os.environ.get('M', '10'))


def load_perf(path):
    """CPU ms per call, and samples per call of each kernel function with what
    it calls (perf's children), from perf record."""
    c = collections.Counter()
    if not os.path.exists(path):
        return c
    out = subprocess.run(['perf', 'report', '-i', path, '--stdio', '--children', '-n',
                         '--sort', 'sym', '-g', 'none'],
                         capture_output=True, text=True, check=False).stdout
    rows, total = [], 0
    for line in out.splitlines():
        m = re.match(r'\s*([\d.]+)%\s+[\d.]+%\s+(\d+)\s+\[(.)\]\s+(\S+)', line)
        if m:
            rows.append((float(m.group(1)), m.group(3), m.group(4)))
            total += int(m.group(2))  # self samples add up to all samples
    c['cpu ms per call'] = total * 1000.0 / PERF_RATE / PERF_CALLS
    for children, where, sym in rows:
        if where == 'k':
            c['kernel ' + sym] = round(children * total / 100 / PERF_CALLS, 1)
    for k in ('cpu ms per call',):
        c[k] = round(c[k], 1)
    return c


def main():
    out, steps = sys.argv[1], sys.argv[2:]
    for verb in ('add', 'check', 'del'):
        cs = [load('%s/%s.%s' % (out, n, verb)) + load_perf('%s/%s.%s.perf' % (out, n, verb))
              for n in steps]
        keys = sorted(set().union(*cs))
        print('== %s (N = %s)' % (verb.upper(), ', '.join(steps)))
        rows = []
        for k in keys:
            vals = [c.get(k, 0) for c in cs]
            grow = vals[-1] - vals[0]
            if k.startswith('syscall ') and k[8:] in SCHED:
                continue
            if k in KEEP or (abs(grow) > max(2, 0.1 * max(vals[0], 1))):
                rows.append((k, vals))
        for k, vals in rows:
            print('  %-60s %s' % (k, ' / '.join(str(v) for v in vals)))


if __name__ == '__main__':
    main()
