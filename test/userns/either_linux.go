package userns

import (
	"os"
	"testing"

	"cnisuite/pkg/ns"
	"cnisuite/test/sandbox"
)

// For a package with both kinds of test: those that start the built
// plugins, which need the machine's root (as root inside
// scripts/sandbox.sh, in the namespace it made), and those that call the
// plugin's code in the test process, which run anywhere. MainOrSandbox,
// RequireNode and NodeNS put both in the one place the run allows.

// sandboxed reports whether scripts/sandbox.sh started the tests (then they
// run in place; sandbox.Require checks the claim).
func sandboxed() bool { return os.Getenv("CNISUITE_SANDBOX") == "1" }

// MainOrSandbox runs m's tests in place inside scripts/sandbox.sh, and as
// Main does (in a user namespace of their own) everywhere else.
func MainOrSandbox(m *testing.M) {
	if sandboxed() {
		os.Exit(m.Run())
	}
	Main(m)
}

// RequireNode is sandbox.Require inside the sandbox and RequireStateDirs
// elsewhere: a test that programs the network and writes node state.
func RequireNode(t testing.TB) {
	t.Helper()
	if sandboxed() {
		sandbox.Require(t)
		return
	}
	RequireStateDirs(t)
}

// NodeNS makes a fresh network namespace in either place (sandbox.NewNS or
// NewNS), its lo down as a runtime hands it over.
func NodeNS(t testing.TB) *ns.NetNS {
	t.Helper()
	if sandboxed() {
		sandbox.Require(t)
		return sandbox.NewNS(t)
	}
	return NewNS(t)
}
