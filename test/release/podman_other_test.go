//go:build !linux

package release

import (
	"testing"

	"cnisuite/test/release/debroot"
)

// testPodmanNetwork needs network namespaces: Linux only.
func testPodmanNetwork(t *testing.T, _ debroot.Suite) { t.Skip("network namespaces: Linux only") }
