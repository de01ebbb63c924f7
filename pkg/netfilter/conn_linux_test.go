package netfilter

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/test/sandbox"
)

// A chain name longer than the kernel keeps (a reference spoof-check chain
// named after a 300-byte container ID) names no chain: looking it up says
// so instead of failing with ERANGE, so a DEL of such a container succeeds.
func TestOverlongNamesNameNoChain(t *testing.T) {
	sandbox.Require(t)
	conn, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	long := "cni-br-iface-" + strings.Repeat("c", 300) + "-eth0"
	if ok, err := conn.ChainExists(unix.NFPROTO_BRIDGE, "nat", long); ok || err != nil {
		t.Errorf("ChainExists(300-byte name) = %v, %v; want false, nil", ok, err)
	}
	if rules, err := conn.Rules(unix.NFPROTO_BRIDGE, "nat", long); len(rules) != 0 || err != nil {
		t.Errorf("Rules(300-byte name) = %v, %v; want none", rules, err)
	}
}
