package fwfake

import (
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/test/fwtest"
	"cnisuite/test/golden"
)

func TestRender(t *testing.T) {
	for _, tc := range fwtest.RuleCases(t) {
		for _, kind := range []string{fwapi.KindNFTables, fwapi.KindIPTables} {
			if strings.HasSuffix(tc.Name, "_nft") && kind == fwapi.KindIPTables ||
				strings.HasSuffix(tc.Name, "_ipt") && kind == fwapi.KindNFTables {
				continue
			}
			t.Run(tc.Name+"/"+kind, func(t *testing.T) {
				golden.Check(t, tc.Name+"."+kind, Render(kind, tc.Owner, tc.Rules))
			})
		}
	}
}
