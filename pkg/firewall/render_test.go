package firewall

import (
	"strings"
	"testing"

	"cnisuite/test/fwtest"
	"cnisuite/test/golden"
)

func TestRender(t *testing.T) {
	for _, tc := range fwtest.RuleCases(t) {
		for _, kind := range []string{KindNFTables, KindIPTables} {
			if strings.HasSuffix(tc.Name, "_nft") && kind == KindIPTables ||
				strings.HasSuffix(tc.Name, "_ipt") && kind == KindNFTables {
				continue
			}
			t.Run(tc.Name+"/"+kind, func(t *testing.T) {
				golden.Check(t, tc.Name+"."+kind, render(kind, tc.Owner, tc.Rules))
			})
		}
	}
}
