package main

import (
	"context"

	"cnisuite/pkg/types"
)

// newFirewall returns the firewall backend of the given kind.
func newFirewall(_ context.Context, kind string) (fwBackend, error) {
	return nil, types.Errorf(types.ErrNotAvailable, "firewall backend %q: not built in yet", kind)
}
