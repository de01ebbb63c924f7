package firewall

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
)

// nodeSignals is what the automatic choice reads of the node the first
// time a network gets rules (see prefer).
type nodeSignals struct {
	// kubeProxyNFT names the kube-proxy table found ("ip kube-proxy"):
	// kube-proxy runs in nftables mode.
	kubeProxyNFT string
	// natRules says where iptables nat rules were found ("iptables-nft ip
	// nat POSTROUTING", "iptables-legacy ip6 nat"), or is "".
	natRules string
}

// prefer returns the backend the node gives reason for, and the reason.
func (s nodeSignals) prefer() (kind, why string) {
	switch {
	case s.kubeProxyNFT != "":
		return KindNFTables, "kube-proxy runs in nftables mode (table " + s.kubeProxyNFT + ")"
	case s.natRules != "":
		return KindIPTables, "the node's iptables nat rules (" + s.natRules + ")"
	}
	return KindNFTables, "no iptables nat rules on the node"
}

// natBaseChains are the built-in chains of table nat. A rule of table nat
// that is not in one of them sits in a chain that only works once one of
// them jumps to it, so their rule counts say whether nat holds any rule
// that matters.
var natBaseChains = []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"}

// readNode reads the node's signals without starting a process and
// without a dump: two table look-ups (kube-proxy's), then the use count of
// each built-in chain of iptables-nft's tables ip and ip6 nat (a chain's
// use counts its rules), then, only when the legacy ip_tables modules
// already hold a nat table, that table's entry count (one getsockopt per
// family). Whether iptables is iptables-nft or legacy does not matter:
// both kinds are read, since other software may use either binary.
func readNode() (nodeSignals, error) {
	var s nodeSignals
	conn, err := netfilter.Dial()
	if err != nil {
		return s, err
	}
	defer conn.Close()
	for _, fam := range []struct {
		name  string
		proto byte
	}{{"ip", unix.NFPROTO_IPV4}, {"ip6", unix.NFPROTO_IPV6}} {
		ok, err := conn.TableExists(fam.proto, "kube-proxy")
		if err != nil {
			return s, err
		}
		if ok {
			s.kubeProxyNFT = fam.name + " kube-proxy"
			return s, nil
		}
		for _, chain := range natBaseChains {
			_, use, err := conn.ChainUse(fam.proto, "nat", chain)
			if err != nil {
				return s, err
			}
			if use > 0 && s.natRules == "" {
				s.natRules = fmt.Sprintf("iptables-nft %s nat %s", fam.name, chain)
			}
		}
	}
	if s.natRules == "" {
		s.natRules, err = legacyNATRules()
	}
	return s, err
}

// legacyNATRules returns "iptables-legacy ip nat" (or ip6) when the legacy
// nat table of a family holds more than its built-in chains' policies. It
// asks the kernel only for a table that ip{,6}_tables_names lists (under
// /proc/thread-self/net: /proc/net shows the namespace of the process's
// first thread, not the caller's): asking for another would load iptable_nat and create it.
func legacyNATRules() (string, error) {
	for _, fam := range []struct {
		what, names string
		domain, sol int
	}{
		{"iptables-legacy ip nat", "/proc/thread-self/net/ip_tables_names", unix.AF_INET, unix.SOL_IP},
		{"iptables-legacy ip6 nat", "/proc/thread-self/net/ip6_tables_names", unix.AF_INET6, unix.SOL_IPV6},
	} {
		listed, err := listsTable(fam.names, "nat")
		if err != nil {
			return "", err
		}
		if !listed {
			continue
		}
		entries, hooks, err := legacyTableInfo(fam.domain, fam.sol, "nat")
		if err != nil {
			return "", fmt.Errorf("reading the %s table: %w", fam.what, err)
		}
		// An empty table holds one policy per built-in chain and the
		// closing error entry.
		if entries > hooks+1 {
			return fam.what, nil
		}
	}
	return "", nil
}

// listsTable reports whether the file (one table name a line) lists name;
// a missing file (ip_tables not loaded) lists nothing, and so does one
// this process may not read: the root of a user namespace made together
// with its network namespace (RootlessKit without --detach-netns) finds
// the namespace's /proc/net files still the real root's, and
// iptables-legacy cannot list its tables there either.
func listsTable(path, name string) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if sc.Text() == name {
			return true, nil
		}
	}
	return false, nil
}

// iptSoGetInfo is IPT_SO_GET_INFO, also IP6T_SO_GET_INFO (IPT_BASE_CTL).
const iptSoGetInfo = 64

// iptGetinfo is struct ipt_getinfo (and ip6t_getinfo, the same layout).
type iptGetinfo struct {
	Name       [32]byte
	ValidHooks uint32
	HookEntry  [5]uint32
	Underflow  [5]uint32
	NumEntries uint32
	Size       uint32
}

// legacyTableInfo returns the number of entries of a legacy table and of
// its built-in chains.
// Equivalent to: iptables-legacy -t <table> -S | wc -l (roughly)
func legacyTableInfo(domain, level int, table string) (entries, hooks uint32, err error) {
	fd, err := unix.Socket(domain, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	var info iptGetinfo
	copy(info.Name[:], table)
	size := uint32(unsafe.Sizeof(info))
	// x/sys/unix has no getsockopt for this structure, whose name is
	// input as well as output.
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), iptSoGetInfo,
		uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return 0, 0, errno
	}
	return info.NumEntries, uint32(bits.OnesCount32(info.ValidHooks)), nil
}
