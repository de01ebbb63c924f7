package firewall

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

// A configuration without a backend key gets iptables when it is usable,
// nftables when only it is, and code 50 naming both reasons otherwise.
func TestChooseDefaultBackend(t *testing.T) {
	usable := func(kind string) *Fake { return NewFake(kind) }
	broken := func(kind, why string) *Fake {
		f := NewFake(kind)
		f.Err = types.Errorf(types.ErrNotAvailable, "%s", why)
		return f
	}
	ctx := context.Background()
	if b, err := choose(ctx, usable(KindIPTables), usable(KindNFTables)); err != nil || b.(*Fake).Kind != KindIPTables {
		t.Errorf("both usable: %v, %v; want iptables", b, err)
	}
	if b, err := choose(ctx, broken(KindIPTables, "no iptables-restore"), usable(KindNFTables)); err != nil || b.(*Fake).Kind != KindNFTables {
		t.Errorf("only nftables usable: %v, %v; want nftables", b, err)
	}
	_, err := choose(ctx, broken(KindIPTables, "no iptables-restore"), broken(KindNFTables, "no nft"))
	if types.Code(err) != types.CodeNotAvailable || !strings.Contains(err.Error(), "no iptables-restore") || !strings.Contains(err.Error(), "no nft") {
		t.Errorf("neither usable: %v (code %d), want code 50 naming both reasons", err, types.Code(err))
	}
	if errors.Is(err, types.ErrInvalidConfig) {
		t.Errorf("neither usable is not a configuration error: %v", err)
	}
}
