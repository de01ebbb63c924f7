package sandbox

import (
	"testing"

	"github.com/containernetworking/cni/libcni"
)

// Runtime returns a runtime client (the real libcni) that finds the
// freshly built plugins and caches results in a directory of the test's own.
func Runtime(t testing.TB) *libcni.CNIConfig {
	t.Helper()
	return libcni.NewCNIConfigWithCacheDir([]string{Bin(t)}, t.TempDir(), nil)
}

// ConfList parses a conflist or fails the test.
func ConfList(t testing.TB, data string) *libcni.NetworkConfigList {
	t.Helper()
	list, err := libcni.ConfListFromBytes([]byte(data))
	if err != nil {
		t.Fatalf("parsing conflist: %v\n%s", err, data)
	}
	return list
}
