package link

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"cnisuite/pkg/ns"
	"cnisuite/pkg/types"
)

// OpenContainer opens a namespace and a route socket in it; a missing
// path or one that is no namespace is a bad environment (CNI code 4) for
// ADD, and nothing to do (with a warning for the latter) for DEL.
func TestOpenContainer(t *testing.T) {
	n := newNS(t)
	notNS := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notNS, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "gone")
	tests := []struct {
		name     string
		path     string
		tolerant bool
		wantErr  error // nil: opened, or (tolerant) nothing
		warned   bool
	}{
		{name: "namespace", path: n.Path()},
		{name: "missing_add", path: missing, wantErr: ns.ErrNotExist},
		{name: "missing_del", path: missing, tolerant: true},
		{name: "not_a_namespace_add", path: notNS, wantErr: ns.ErrNotNetNS},
		{name: "not_a_namespace_del", path: notNS, tolerant: true, warned: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warnings []error
			got, h, err := OpenContainer(tt.path, tt.tolerant, func(err error) { warnings = append(warnings, err) })
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("OpenContainer() = %v, want %v", err, tt.wantErr)
			}
			if err != nil && types.Code(err) != types.CodeInvalidEnv {
				t.Errorf("OpenContainer() error code %d, want %d", types.Code(err), types.CodeInvalidEnv)
			}
			if (len(warnings) > 0) != tt.warned {
				t.Errorf("warnings %v, want some: %v", warnings, tt.warned)
			}
			if tt.name != "namespace" {
				if got != nil || h != nil {
					t.Errorf("OpenContainer() opened %v, %v", got, h)
				}
				return
			}
			defer got.Close()
			defer h.Close()
			links, err := h.LinkList()
			if err != nil || len(links) != 1 || links[0].Attrs().Name != "lo" {
				t.Errorf("links through the socket: %v, %v; want lo of the fresh namespace", links, err)
			}
		})
	}
}
