#!/bin/bash
# Runs a command (make bench's cnibench) in a CPU-accounting cgroup of its
# own and adds "-cgroup-cpu /proc/self/fd/9" to its arguments, fd 9 being
# the cgroup's counter: every process of the run counts, the helpers a
# plugin leaves to init included, which the waited-for CPU of cnibench's
# other rows misses. Without a writable cgroup file system, the command
# runs as it is.
#
#   test/bench/cgroup-cpu.sh COMMAND [ARG...]
set -euo pipefail
name=cnisuite-bench-$$
if [ -w /sys/fs/cgroup/cpuacct ]; then # v1
	parent=/sys/fs/cgroup/cpuacct$(sed -n 's/^[0-9]*:[^:]*cpuacct[^:]*://p' /proc/self/cgroup | head -1)
	counter=cpuacct.usage
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then # v2
	parent=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup | head -1)
	counter=cpu.stat
else
	echo "cgroup-cpu: no writable cgroup file system: the run's cgroup CPU is not measured" >&2
	exec "$@"
fi
dir=${parent%/}/$name
mkdir "$dir"
leave() { echo $$ >"$parent/cgroup.procs"; rmdir "$dir" 2>/dev/null || true; }
trap leave EXIT
echo $$ >"$dir/cgroup.procs"
exec 9<"$dir/$counter"
"$@" -cgroup-cpu /proc/self/fd/9
