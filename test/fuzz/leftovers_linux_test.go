package fuzz

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ethtool"
)

// state is what an input could leave behind, taken before its ADD and
// after its DEL. Each map holds one line per object; the firewall's lines
// count repeats.
type state struct {
	nodeLinks map[string]string // name → attributes, bridges left out
	nodeAddrs map[string]bool   // "link address", bridges left out
	ctrLinks  map[string]string
	ctrAddrs  map[string]bool
	sysctls   map[string]string // in the container, tuning's keys
	rules     map[string]int    // firewall objects of the node
	bridges   map[string]bool   // the node's bridges, kept by design
	ruleErr   error
	runFiles  map[string]bool // files under /run/cnisuite (records of rules)
}

// tuningSysctls are the container sysctls the tuning bases write.
var tuningSysctls = []string{
	"ipv4/conf/eth0/arp_ignore", "ipv4/conf/eth0/rp_filter", "ipv4/conf/eth0/arp_announce",
	"core/somaxconn", "ipv6/conf/eth0/accept_ra",
}

// snapshot reads the node's and the container's state.
func (w *world) snapshot() (*state, error) {
	s := &state{nodeLinks: map[string]string{}, nodeAddrs: map[string]bool{}, ctrLinks: map[string]string{},
		ctrAddrs: map[string]bool{}, sysctls: map[string]string{}, bridges: map[string]bool{}}
	err := w.node.Do(func() error { return readLinks(s.nodeLinks, s.nodeAddrs, s.bridges) })
	if err != nil {
		return nil, fmt.Errorf("node links: %w", err)
	}
	err = w.ctr.Do(func() error {
		for _, k := range tuningSysctls {
			if b, err := os.ReadFile("/proc/sys/net/" + k); err == nil {
				s.sysctls[k] = strings.TrimSpace(string(b))
			}
		}
		readEthtool(s.sysctls, "eth0")
		return readLinks(s.ctrLinks, s.ctrAddrs, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("container links: %w", err)
	}
	s.rules, s.ruleErr = w.firewall()
	s.runFiles = map[string]bool{}
	err = w.node.Do(func() error { return runFiles(s.runFiles) })
	return s, err
}

// runFiles lists the files the plugins keep under /run/cnisuite for the
// calling thread's network namespace (other inputs run in parallel, each
// on a node of its own): their records of the rules they wrote (the
// iptables jumps' handles) and of their networks' firewall backends (the
// choice and its holders; the lock files stay by design), which DEL
// removes with the rules.
func runFiles(out map[string]bool) error {
	fi, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	roots := []string{filepath.Join("/run/cnisuite/iptables-jumps", strconv.FormatUint(ino, 10))}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	cookie, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	unix.Close(fd)
	if err != nil {
		return err
	}
	roots = append(roots, filepath.Join("/run/cnisuite/fw-backend", "c"+strconv.FormatUint(cookie, 10)))
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != ".lock" {
				out[p] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// readLinks lists the links of the calling thread's namespace with the
// attributes a plugin changes, and their addresses. With bridges non-nil,
// bridges are listed there instead: a bridge and its gateway addresses
// stay after DEL by design.
func readLinks(links map[string]string, addrs, bridges map[string]bool) error {
	all, err := netlink.LinkList()
	if err != nil {
		return err
	}
	for _, l := range all {
		a := l.Attrs()
		if bridges != nil && l.Type() == "bridge" {
			bridges[a.Name] = true
			continue
		}
		// The running flag follows the carrier, which the kernel sets
		// when it pleases; the plugins do not own it.
		links[a.Name] = fmt.Sprintf("%s mac %s mtu %d flags %v txqlen %d master %d",
			l.Type(), a.HardwareAddr, a.MTU, a.Flags&^net.FlagRunning, a.TxQLen, a.MasterIndex)
		list, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, ad := range list {
			if !kernelAddr(a.Name, ad.IPNet) {
				addrs[a.Name+" "+ad.IPNet.String()] = true
			}
		}
	}
	return nil
}

// kernelAddr reports whether the kernel, not a plugin, put an address on
// a link: IPv6 link-local addresses, and loopback's addresses, which stay
// when lo goes down again.
func kernelAddr(link string, a *net.IPNet) bool {
	return a.IP.IsLinkLocalUnicast() || link == "lo" && a.IP.IsLoopback()
}

// firewall lists the node's nftables objects (iptables-nft rules
// included) as lines: rules without their counters, set elements, and
// regular chains. Tables, sets and base chains are a backend's skeleton,
// which stays.
func (w *world) firewall() (map[string]int, error) {
	c, err := nftables.New(nftables.WithNetNSFd(int(w.node.Fd())))
	if err != nil {
		return nil, err
	}
	defer c.CloseLasting()
	out := map[string]int{}
	chains, err := c.ListChains()
	if err != nil {
		return nil, err
	}
	for _, ch := range chains {
		where := fmt.Sprintf("%d/%s/%s", ch.Table.Family, ch.Table.Name, ch.Name)
		if ch.Hooknum == nil {
			out["chain "+where]++
		}
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			return nil, fmt.Errorf("rules of %s: %w", where, err)
		}
		for _, r := range rules {
			out["rule "+where+" "+ruleLine(r)]++
		}
	}
	tables, err := c.ListTables()
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		if err := setElements(c, t, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ruleLine spells a rule's expressions, counters left out, and its
// comment.
func ruleLine(r *nftables.Rule) string {
	var parts []string
	for _, e := range r.Exprs {
		if _, ok := e.(*expr.Counter); ok {
			continue
		}
		b, _ := json.Marshal(e) // plain structs; an error would only shorten the line
		parts = append(parts, fmt.Sprintf("%T%s", e, b))
	}
	return strings.Join(parts, " ") + fmt.Sprintf(" userdata %q", r.UserData)
}

// setElements adds a line per element of every set of table t to out.
func setElements(c *nftables.Conn, t *nftables.Table, out map[string]int) error {
	sets, err := c.GetSets(t)
	if err != nil {
		return fmt.Errorf("sets of %s: %w", t.Name, err)
	}
	for _, s := range sets {
		elems, err := c.GetSetElements(s)
		if err != nil {
			return fmt.Errorf("elements of %s/%s: %w", t.Name, s.Name, err)
		}
		for _, e := range elems {
			v, _ := json.Marshal(e.VerdictData)
			out[fmt.Sprintf("element %d/%s/%s key %x-%x val %x verdict %s end %v comment %q",
				t.Family, t.Name, s.Name, e.Key, e.KeyEnd, e.Val, v, e.IntervalEnd, e.Comment)]++
		}
	}
	return nil
}

// leftovers compares the state before ADD with the state after DEL.
func leftovers(before, after *state) []string {
	var out []string
	out = append(out, diffMap("node link", before.nodeLinks, after.nodeLinks)...)
	out = append(out, diffSet("node address", before.nodeAddrs, after.nodeAddrs)...)
	out = append(out, diffMap("container link", before.ctrLinks, after.ctrLinks)...)
	out = append(out, diffSet("container address", before.ctrAddrs, after.ctrAddrs)...)
	out = append(out, diffMap("container sysctl", before.sysctls, after.sysctls)...)
	out = append(out, diffSet("file", before.runFiles, after.runFiles)...)
	if after.ruleErr != nil {
		out = append(out, fmt.Sprintf("reading the firewall: %v", after.ruleErr))
	} else if before.ruleErr == nil {
		for k, n := range after.rules {
			if n > before.rules[k] {
				out = append(out, fmt.Sprintf("firewall: %s (%d more than before ADD)", k, n-before.rules[k]))
			}
		}
	}
	sort.Strings(out)
	return out
}

// diffMap lists the keys added, changed and removed between two states.
func diffMap(what string, before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if b, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s added: %s", what, k, v))
		} else if b != v {
			out = append(out, fmt.Sprintf("%s %s changed: %s, was %s", what, k, v, b))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s removed", what, k))
		}
	}
	return out
}

// diffSet lists the members added and removed between two states.
func diffSet(what string, before, after map[string]bool) []string {
	var out []string
	for k := range after {
		if !before[k] {
			out = append(out, fmt.Sprintf("%s %s added", what, k))
		}
	}
	for k := range before {
		if !after[k] {
			out = append(out, fmt.Sprintf("%s %s removed", what, k))
		}
	}
	return out
}

// fileLeftovers lists the files an input left: under its own directory,
// any file but its resolv.conf, host-local's lock, last_reserved_ip,
// boot ID and index stamp files; under the node-wide state
// directories, any file that names the container ID or holds it.
func fileLeftovers(inputDir, containerID string) []string {
	var out []string
	_ = filepath.WalkDir(inputDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a directory vanishing under us is no leftover
		}
		rel, _ := filepath.Rel(inputDir, p)
		if !allowedFile(rel) {
			out = append(out, "file "+p)
		}
		return nil
	})
	if len(containerID) < 3 {
		return out // too short to recognize in other files
	}
	for _, root := range []string{"/var/lib/cni", "/run/cni"} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(p)
			if strings.Contains(p, containerID) || strings.Contains(string(b), containerID) {
				out = append(out, "file naming the container "+p)
			}
			return nil
		})
	}
	return out
}

// allowedFile reports whether a file may stay in an input's directory
// after DEL (rel: its path there).
func allowedFile(rel string) bool {
	base := filepath.Base(rel)
	switch {
	case rel == "resolv.conf", base == "lock", strings.HasPrefix(base, "last_reserved_ip"):
		return true
	case strings.Contains(rel, ".host-local-boot"):
		return true // the boot ID, one per network and boot
	case strings.Contains(rel, ".host-local-index"):
		return strings.HasPrefix(base, ".") // the index's stamp; entries must go
	}
	return false
}

// readEthtool records, under "ethtool/<ifname>/…" keys, the features
// asked for and on, and the channel counts of ifname (tuning's features
// and channels): a DEL that did not put them back shows as a change.
// An interface that is not there, or a kernel without the ethtool
// netlink family, records nothing.
func readEthtool(out map[string]string, ifname string) {
	c, err := ethtool.Dial()
	if err != nil {
		return
	}
	defer c.Close()
	if f, err := c.Features(ifname); err == nil {
		var on, wanted []string
		for i, n := range f.Names {
			if f.Active[i] {
				on = append(on, n)
			}
			if f.Wanted[i] {
				wanted = append(wanted, n)
			}
		}
		out["ethtool/"+ifname+"/active"] = strings.Join(on, ",")
		out["ethtool/"+ifname+"/wanted"] = strings.Join(wanted, ",")
	}
	if ch, err := c.Channels(ifname); err == nil {
		out["ethtool/"+ifname+"/channels"] = fmt.Sprintf("rx %d tx %d other %d combined %d", ch.RX, ch.TX, ch.Other, ch.Combined)
	}
}
