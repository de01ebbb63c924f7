package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"cnisuite/test/sandbox"
)

// flushDuring flushes the ruleset, as nft flush ruleset does (over
// netlink here, to land at any instant), once, at a random instant of the
// next span, and returns a wait for it.
func flushDuring(t *testing.T, span time.Duration) (wait func()) {
	conn, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(rand.N(span))
		conn.FlushRuleset()
		_ = conn.Flush() // a reset of the node; one that fails is no matter
	}()
	return func() { <-done }
}

// flushLoopMappings are the mappings of the i-th attachment of the flush
// loop: 1,000 TCP and UDP ports, so that a DEL's read of them takes long
// enough for a flush to land often between the read and the commit.
func flushLoopMappings(i int) []map[string]any {
	var out []map[string]any
	for k := 0; k < 500; k++ {
		port := 10000 + 500*i + k
		out = append(out, map[string]any{"hostPort": port, "containerPort": 80, "protocol": "tcp"},
			map[string]any{"hostPort": port, "containerPort": 53, "protocol": "udp"})
	}
	return out
}

// TestDelUnderFlushLoop: 20 attachments of 1,000 host ports each are
// added and deleted one after another on nftables and on iptables-nft,
// the ruleset flushed at a random instant of the first 40 ms of each DEL
// (a DEL takes about as long). Every DEL succeeds, and no claim or record
// of them is left.
// Before, a flush between a DEL's read and its commit failed the DEL with
// "no such file or directory", leaving its claims and record.
func TestDelUnderFlushLoop(t *testing.T) {
	sandbox.Require(t)
	bin := filepath.Join(sandbox.Bin(t), "portmap")
	for _, v := range []iptablesVariant{{name: "nftables"}, iptablesNFT} {
		t.Run(v.name, func(t *testing.T) {
			backend := map[bool]string{true: "nftables", false: "iptables"}[v.multi == ""]
			d := direct{bin: bin, path: v.pathFor(t)}
			const cycles = 20
			var failed []string
			addFailed := 0
			for i := 0; i < cycles; i++ {
				id := fmt.Sprintf("flushloop-%s-%d", v.name, i)
				conf := portmapConf(t, "flushloop-"+v.name, backend, flushLoopMappings(i), nil)
				if err := d.run("ADD", id, conf); err != nil {
					addFailed++
				}
				wait := flushDuring(t, 40*time.Millisecond)
				if err := d.run("DEL", id, conf); err != nil {
					failed = append(failed, err.Error())
				}
				wait()
			}
			t.Logf("%d of %d ADDs failed under the flush loop", addFailed, cycles)
			if len(failed) > 0 {
				t.Errorf("%d of %d DELs failed under the flush loop:\n%s", len(failed), cycles, strings.Join(failed, "\n"))
			}
			if left := filesNaming(t, "flushloop-"+v.name+"-"); len(left) > 0 {
				t.Errorf("claims or records left: %q", left)
			}
		})
	}
}
