package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// CNISUITE_SANDBOX=1 alone does not make a namespace the sandbox: the
// guard wants the namespace the script named, and the script, called with
// the variable but without that name, makes a sandbox of its own rather
// than run in place (a hand-set variable once ran privileged tests in the
// machine's own namespace).
func TestHandSetVariableIsNotASandbox(t *testing.T) {
	Require(t)
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if !inSandboxNetns() {
		t.Fatalf("inSandboxNetns() = false inside scripts/sandbox.sh (CNISUITE_SANDBOX_NETNS %q, namespace %q)", os.Getenv("CNISUITE_SANDBOX_NETNS"), self)
	}
	t.Setenv("CNISUITE_SANDBOX_NETNS", "")
	if inSandboxNetns() {
		t.Error("inSandboxNetns() = true with CNISUITE_SANDBOX_NETNS empty")
	}
	t.Setenv("CNISUITE_SANDBOX_NETNS", "net:[1]")
	if inSandboxNetns() {
		t.Error("inSandboxNetns() = true with another namespace named")
	}

	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "sandbox.sh")
	cmd := exec.Command(script, "readlink", "/proc/self/ns/net")
	cmd.Env = append(os.Environ(), "CNISUITE_SANDBOX=1", "CNISUITE_SANDBOX_NETNS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox.sh with the variable set by hand: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got == self {
		t.Errorf("sandbox.sh with CNISUITE_SANDBOX=1 set by hand ran in the caller's namespace %s; want one of its own", got)
	}
	cmd = exec.Command(script, "readlink", "/proc/self/ns/net")
	cmd.Env = append(os.Environ(), "CNISUITE_SANDBOX_NETNS="+self) // the sandbox's own name: runs in place
	out, err = cmd.CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != self {
		t.Errorf("sandbox.sh inside the sandbox ran in %q (%v); want in place, %s", got, err, self)
	}
}
