package main

import (
	"context"
	"testing"
	"time"

	"cnisuite/test/sandbox"
)

// BenchmarkAddCheckDel measures bridge + host-local through libcni, as a
// runtime drives them: one ADD, one CHECK and one DEL per iteration, each
// reported as its own latency.
//
//	scripts/sandbox.sh go test -run '^$' -bench AddCheckDel -benchtime 200x ./plugins/main/bridge
func BenchmarkAddCheckDel(b *testing.B) {
	for _, bc := range []struct{ name, extra string }{
		{"gateway", `"isGateway":true`},
		{"gateway_ipmasq", `"isGateway":true,"ipMasq":true`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := newNet(b, "1.1.0", "bbench"+bc.name[:2], bc.extra, hostLocal(b, "10.250.0.0/16"))
			warm := &ctr{id: "warm", ns: sandbox.NewNS(b)} // the bridge exists, as on a busy node
			warm.rc = n.runtimeConf(warm.id, warm.ns)
			if _, err := n.tryAdd(warm.rc); err != nil {
				b.Fatal(err)
			}
			c := &ctr{id: "bench", ns: sandbox.NewNS(b)}
			c.rc = n.runtimeConf(c.id, c.ns)
			var add, check, del int64
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := nanotime()
				if _, err := n.tryAdd(c.rc); err != nil {
					b.Fatal(err)
				}
				t1 := nanotime()
				if err := n.rt.CheckNetworkList(ctx, n.list, c.rc); err != nil {
					b.Fatal(err)
				}
				t2 := nanotime()
				if err := n.rt.DelNetworkList(ctx, n.list, c.rc); err != nil {
					b.Fatal(err)
				}
				add, check, del = add+t1-t0, check+t2-t1, del+nanotime()-t2
			}
			b.ReportMetric(float64(add)/float64(b.N)/1e6, "ms-add")
			b.ReportMetric(float64(check)/float64(b.N)/1e6, "ms-check")
			b.ReportMetric(float64(del)/float64(b.N)/1e6, "ms-del")
		})
	}
}

func nanotime() int64 { return time.Now().UnixNano() }
