package main

import (
	"errors"
	"net"
	"testing"

	"cnisuite/test/sandbox"
)

// On a real kernel, a node namespace with no route to the container's
// address makes EnableLocalnet answer errNoRoute, which ADD tolerates.
func TestEnableLocalnetWithoutRoute(t *testing.T) {
	sandbox.Require(t)
	node := sandbox.NewNS(t)
	err := node.Do(func() error {
		return linuxHost{}.EnableLocalnet(net.ParseIP("10.123.45.6"), "test")
	})
	if !errors.Is(err, errNoRoute) {
		t.Fatalf("EnableLocalnet(unrouted address) = %v, want errNoRoute", err)
	}
}
