package rootless

import "testing"

func TestIsInitialMap(t *testing.T) {
	for m, want := range map[string]bool{
		"         0          0 4294967295\n": true,
		"         0       1000          1\n": false,
		"0 100000 65536\n":                   false,
		"":                                   false,
	} {
		if got := isInitialMap(m); got != want {
			t.Errorf("isInitialMap(%q) = %v, want %v", m, got, want)
		}
	}
}

func TestLookupLastWins(t *testing.T) {
	env := []string{"XDG_RUNTIME_DIR=/a", "OTHER=1", "XDG_RUNTIME_DIR=/run/user/1000"}
	if got := lookup(env, "XDG_RUNTIME_DIR"); got != "/run/user/1000" {
		t.Errorf("lookup = %q", got)
	}
}
