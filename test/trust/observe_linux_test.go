package trust

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"cnisuite/test/sandbox"
)

// proc is a process found running.
type proc struct {
	pid       int
	comm, exe string
}

func (p proc) String() string { return fmt.Sprintf("pid %d %q (%s)", p.pid, p.comm, p.exe) }

// oursRunning lists the processes of ours that run now: those whose
// executable lies in bin, and those whose command name starts "cnisuite-"
// in this network namespace (a helper names itself so). Processes in keep
// (the test's own watcher) are left out.
func oursRunning(t *testing.T, bin string, keep ...int) []proc {
	t.Helper()
	self, _ := os.Readlink("/proc/self/ns/net")
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []proc
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if pid == os.Getpid() || containsInt(keep, pid) {
			continue
		}
		exe, _ := os.Readlink(d + "/exe")
		exe = strings.TrimSuffix(exe, " (deleted)")
		comm, _ := os.ReadFile(d + "/comm")
		netns, _ := os.Readlink(d + "/ns/net")
		p := proc{pid: pid, comm: strings.TrimSpace(string(comm)), exe: exe}
		if (exe != "" && filepath.Dir(exe) == bin) || (strings.HasPrefix(p.comm, "cnisuite-") && netns == self) {
			out = append(out, p)
		}
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// listeners lists what listens in this network namespace: Unix sockets
// in the listening state (their path, "@name" for an abstract one, or
// "inode N" without a name) from /proc/net/unix, and TCP listeners and
// bound UDP sockets (by local address) from /proc/net/{tcp,udp}{,6}.
func listeners(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range procLines(t, "/proc/net/unix") {
		f := strings.Fields(l)
		if len(f) < 7 || f[0] == "Num" {
			continue
		}
		flags, _ := strconv.ParseUint(f[3], 16, 32)
		if flags&0x10000 == 0 { // __SO_ACCEPTCON: listening
			continue
		}
		name := "inode " + f[6]
		if len(f) > 7 {
			name = f[7]
		}
		out = append(out, "unix "+name)
	}
	for _, file := range []string{"tcp", "tcp6", "udp", "udp6"} {
		for _, l := range procLines(t, "/proc/net/"+file) {
			f := strings.Fields(l)
			if len(f) < 4 || f[0] == "sl" {
				continue
			}
			if strings.HasPrefix(file, "tcp") && f[3] != "0A" { // TCP_LISTEN
				continue
			}
			out = append(out, file+" "+f[1])
		}
	}
	sort.Strings(out)
	return out
}

func procLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	return lines
}

// added is what after holds and before did not.
func added(before, after []string) []string {
	var out []string
	for _, s := range after {
		if !containsString(before, s) {
			out = append(out, s)
		}
	}
	return out
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// wantNothingOfOurs fails the test when, after what (a verb), a process of
// ours runs or a socket listens that did not before. ss -xlp is shown
// with a listener, as an operator would look.
func wantNothingOfOurs(t *testing.T, bin, what string, base []string, keep ...int) {
	t.Helper()
	if ps := oursRunning(t, bin, keep...); len(ps) > 0 {
		t.Errorf("after %s: processes of ours still run: %v", what, ps)
	}
	if l := added(base, listeners(t)); len(l) > 0 {
		ss, _ := exec.Command("ss", "-xlp").CombinedOutput()
		t.Errorf("after %s: new listening sockets %q\nss -xlp:\n%s", what, l, ss)
	}
}

// nodeState is what a process without CAP_NET_ADMIN must not be able to
// change through us: the node's and the pods' links with their addresses
// and routes, and every rule of both firewall backends.
func nodeState(t *testing.T, netns ...string) string {
	t.Helper()
	var b strings.Builder
	cmds := [][]string{{"ip", "-d", "-o", "link", "show"}, {"ip", "-o", "addr", "show"}, {"ip", "route", "show", "table", "all"},
		{"ip", "-6", "route", "show", "table", "all"}, {"nft", "list", "ruleset"}, {"iptables-legacy-save"}, {"ip6tables-legacy-save"}}
	for _, c := range cmds {
		fmt.Fprintf(&b, "## %s\n%s", strings.Join(c, " "), sandbox.Run(t, c...))
		for _, n := range netns {
			fmt.Fprintf(&b, "## in %s: %s\n%s", n, strings.Join(c, " "), sandbox.Run(t, append([]string{"nsenter", "--net=" + n}, c...)...))
		}
	}
	return stripCounters(b.String())
}

// stripCounters drops what changes by itself: packet and byte counters,
// the save tools' date lines, the bridge's timers, and what the kernel
// changes on its own after a call (carrier and operational state, IPv6
// duplicate address detection, the link-local routes), and spacing.
func stripCounters(s string) string {
	s = volatile.ReplaceAllString(s, "")
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "# Generated by") || strings.HasPrefix(l, "# Completed") || kernelRoute.MatchString(l) {
			continue
		}
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(out, "\n")
}

// kernelRoute matches the IPv6 routes the kernel adds and removes with a
// link's carrier and address state.
var kernelRoute = regexp.MustCompile(`^((local|anycast) fe80::|fe80::/64 |multicast ff00::/8 )`)

var volatile = regexp.MustCompile(`\[\d+:\d+\]|counter packets \d+ bytes \d+|_timer +[\d.]+|NO-CARRIER,|,LOWER_UP|\bstate \w+|\blinkdown\b|\btentative\b`)
