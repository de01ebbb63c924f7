package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"cnisuite/test/sandbox"
)

// fakeDHCP stands in for an IPAM plugin that, like dhcp, needs the
// container's interface to exist when it is asked for an address.
const fakeDHCP = `#!/bin/sh
case "$CNI_COMMAND" in
ADD)
	if ! nsenter --net="$CNI_NETNS" ip link show "$CNI_IFNAME" >/dev/null 2>&1; then
		echo '{"code":11,"msg":"interface not there yet"}'
		exit 1
	fi
	echo '{"cniVersion":"1.0.0","ips":[{"address":"10.251.0.5/24"}]}'
	;;
esac
exit 0
`

// TestIPAMThatNeedsTheInterface: an IPAM plugin that asks for the
// container's interface (as dhcp does) finds it. Bridge runs such plugins
// after the veth is made; with the concurrent path the veth usually wins the
// race too, so this guards the behaviour rather than proving the order.
func TestIPAMThatNeedsTheInterface(t *testing.T) {
	sandbox.Require(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake-dhcp"), []byte(fakeDHCP), 0o755); err != nil {
		t.Fatal(err)
	}
	n := newNet(t, "1.0.0", "brdhcp0", "", `{"type":"fake-dhcp"}`)
	n.rt = libcni.NewCNIConfigWithCacheDir([]string{sandbox.Bin(t), dir}, t.TempDir(), nil)
	for i := 0; i < 3; i++ {
		c := n.add("dhcp-order")
		if got := c.addr(4); got == nil || got.String() != "10.251.0.5" {
			t.Fatalf("container address = %v, want 10.251.0.5", got)
		}
		if err := n.rt.DelNetworkList(context.Background(), n.list, c.rc); err != nil {
			t.Fatalf("DEL: %v", err)
		}
	}
}
