package iptables

import (
	"testing"

	"cnisuite/test/userns"
)

// The tests run as root of a user namespace of their own, with network
// and mount namespaces of its own and a tmpfs over /run (test/userns):
// iptables-legacy, iptables-nft and nft act on rulesets no one else
// sees, and the jump files and /run/xtables.lock are the tests' own,
// whether the test process is root or not.
func TestMain(m *testing.M) { userns.Main(m) }

// inNS runs fn inside a fresh network namespace of the tests' user
// namespace, so each test starts from an empty ruleset.
func inNS(t *testing.T, fn func()) {
	t.Helper()
	userns.RequireStateDirs(t)
	n := userns.NewNS(t)
	if err := n.Do(func() error { fn(); return nil }); err != nil {
		t.Fatalf("entering test namespace: %v", err)
	}
}
