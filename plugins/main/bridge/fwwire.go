package main

import (
	"context"

	"cnisuite/pkg/firewall"
)

// newFirewall returns the firewall backend of the given kind; "" chooses
// automatically, once per call.
func newFirewall(ctx context.Context, kind string) (fwBackend, error) {
	return firewall.New(ctx, kind)
}
