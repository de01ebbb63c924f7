package main

import (
	"testing"

	"github.com/containernetworking/cni/libcni"

	"cnisuite/test/sandbox"
)

// BenchmarkAddDel measures one ADD and one DEL of the tuning binary through
// libcni, every attribute and one sysctl set, after a hand-made veth.
// Run: scripts/sandbox.sh go test -run '^$' -bench . ./plugins/meta/tuning/
func BenchmarkAddDel(b *testing.B) {
	sandbox.Require(b)
	c := newVethContainer(b, "tub0")
	before, _ := c.snapshot()
	const v = "1.0.0"
	conf := pluginConf(b, tuningConf(v, b.TempDir(), `,"prevResult":`+prevResultJSON(v, c.netns.Path(), before.MAC)))
	rt := &libcni.RuntimeConf{ContainerID: "bench", NetNS: c.netns.Path(), IfName: testIfName,
		CapabilityArgs: map[string]any{"mac": testMAC}}
	cni := sandbox.Runtime(b)
	b.ResetTimer()
	for range b.N {
		if _, err := cni.AddNetwork(ctx, conf, rt); err != nil {
			b.Fatalf("ADD: %v", err)
		}
		if err := cni.DelNetwork(ctx, conf, rt); err != nil {
			b.Fatalf("DEL: %v", err)
		}
	}
}
