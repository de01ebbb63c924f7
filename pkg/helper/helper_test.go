package helper

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// showName is a helper of this test binary that prints its own command
// name; its name is longer than the kernel keeps.
const showName = "show-own-command-name"

func TestMain(m *testing.M) {
	Dispatch(Set{showName: func([]string, io.Reader) error {
		comm, err := os.ReadFile("/proc/self/comm")
		os.Stdout.Write(comm)
		return err
	}})
	os.Exit(m.Run())
}

// TestHelperTakesItsName: a helper started from /proc/self/exe shows its
// helper's name (cut to the kernel's 15 bytes) to ps and to the kernel's
// exit accounting, not "exe".
func TestHelperTakesItsName(t *testing.T) {
	out, err := Command(showName).Output()
	if err != nil {
		t.Fatalf("helper %s: %v", showName, err)
	}
	if got, want := strings.TrimSpace(string(out)), showName[:commLen]; got != want {
		t.Errorf("helper's command name = %q, want %q", got, want)
	}
}

func TestRun(t *testing.T) {
	var got []string
	set := Set{
		"echo": func(args []string, stdin io.Reader) error {
			in, _ := io.ReadAll(stdin)
			got = append(append([]string{}, args...), string(in))
			return nil
		},
		"fail": func([]string, io.Reader) error { return errors.New("boom") },
	}
	tests := []struct {
		name    string
		args    []string
		env     []string
		code    int
		handled bool
		stderr  string
	}{
		{"no_arguments", []string{"bridge"}, nil, 0, false, ""},
		{"other_arguments", []string{"bridge", "-v"}, nil, 0, false, ""},
		{"old_environment", []string{"portmap"}, []string{"CNISUITE_FIREWALL_LINGER_HELPER=1"}, 0, false, ""},
		{"runs", []string{"bridge", Flag, "echo", "a", "b"}, []string{"PATH=/bin"}, 0, true, ""},
		{"fails", []string{"bridge", Flag, "fail"}, nil, 1, true, `helper "fail": boom`},
		{"unknown", []string{"bridge", Flag, "bogus"}, nil, 2, true, "unknown helper"},
		{"nameless", []string{"bridge", Flag}, nil, 2, true, "without a name"},
		{"cni_call", []string{"bridge", Flag, "echo"}, []string{"CNI_COMMAND=ADD"}, 2, true, "CNI_COMMAND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code, handled := Run(tt.args, tt.env, strings.NewReader("in"), &stderr, set)
			if code != tt.code || handled != tt.handled {
				t.Fatalf("Run(%q) = %d, %v; want %d, %v", tt.args, code, handled, tt.code, tt.handled)
			}
			if !strings.Contains(stderr.String(), tt.stderr) || (tt.stderr == "") != (stderr.Len() == 0) {
				t.Errorf("Run(%q) wrote %q to stderr, want %q", tt.args, stderr.String(), tt.stderr)
			}
		})
	}
	if strings.Join(got, ",") != "a,b,in" {
		t.Errorf("helper echo got %q, want its arguments and stdin", got)
	}
}

func TestCommand(t *testing.T) {
	cmd := Command("linger", "x")
	if len(cmd.Args) != 4 || cmd.Args[1] != Flag || cmd.Args[2] != "linger" || cmd.Args[3] != "x" {
		t.Errorf("Command args = %q, want [<prog> %s linger x]", cmd.Args, Flag)
	}
	if cmd.Env == nil || len(cmd.Env) != 0 {
		t.Errorf("Command env = %q, want empty (not inherited)", cmd.Env)
	}
	if !IsRequest(cmd.Args) {
		t.Errorf("IsRequest(%q) = false", cmd.Args)
	}
}
