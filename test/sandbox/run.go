package sandbox

import (
	"os/exec"
	"strings"
	"testing"
)

// Run runs a command and returns its combined output; a failure fails
// the test with the command and what it printed.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
