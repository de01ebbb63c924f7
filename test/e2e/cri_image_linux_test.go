package e2e

import (
	"testing"

	"cnisuite/test/crinode"
)

// The images the CRI test imports; no registry is reachable, so the test
// builds them from the static busybox and names them in containerd's config.
const (
	pauseImage   = "cnisuite.test/pause:e2e"
	busyboxImage = "cnisuite.test/busybox:e2e"
)

// imageSpec is one image of a docker-archive (package crinode).
type imageSpec = crinode.Image

// imageArchive renders a docker-archive tar, the format `ctr images
// import` reads without a registry.
func imageArchive(t testing.TB, images []imageSpec) []byte {
	t.Helper()
	out, err := crinode.Archive(images)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
