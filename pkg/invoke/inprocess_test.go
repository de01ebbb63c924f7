package invoke

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
)

// TestMain: started as a plugin (TestInProcess makes Delegate start this
// binary), answer as a plugin that fails, rather than run the tests again.
func TestMain(m *testing.M) {
	if os.Getenv("CNI_COMMAND") != "" {
		_, _ = os.Stdout.WriteString(`{"code":999,"msg":"the test binary started as a plugin"}` + "\n")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestInProcess: a delegate registered with the build ID of the binary on
// CNI_PATH (here this test binary, linked under the plugin's name) runs in
// this process, sees the command and stdin the binary would, and its
// stderr and error codes come back as from a process; another ID, or
// CNISUITE_NO_INPROCESS=1, starts the binary (which, being this test
// binary, fails: see TestMain).
func TestInProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	id, err := buildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, "inproc")); err != nil {
		t.Fatal(err)
	}
	var seen []string
	fake := &skel.Plugin{Name: "inproc",
		Add:   func(context.Context, *skel.CmdArgs) (*types.Result, error) { return nil, nil },
		Check: func(context.Context, *skel.CmdArgs) error { return nil },
		Del:   func(context.Context, *skel.CmdArgs) error { return nil },
		GC: func(_ context.Context, a *skel.CmdArgs) error {
			seen = append(seen, a.Command+" "+string(a.StdinData))
			_, _ = a.Stderr.Write([]byte("note\n"))
			return nil
		},
		Status: func(context.Context, *skel.CmdArgs) error { return types.Errorf(types.ErrTryAgain, "pool busy") },
	}
	conf := []byte(`{"cniVersion":"1.1.0","name":"n1","type":"inproc"}`)
	ctx := context.Background()
	t.Cleanup(func() { InProcess("inproc", "not-"+id, fake) })

	InProcess("inproc", id, fake)
	var stderr bytes.Buffer
	if err := DelegateGC(ctx, cmdArgs(dir, &stderr), "inproc", conf); err != nil || len(seen) != 1 || seen[0] != "GC "+string(conf) {
		t.Fatalf("DelegateGC in process: %v, plugin saw %q", err, seen)
	}
	if stderr.String() != "note\n" {
		t.Errorf("stderr = %q, want the plugin's note", stderr.String())
	}
	var wire *types.Error
	if err := DelegateStatus(ctx, cmdArgs(dir, &stderr), "inproc", conf); !errors.As(err, &wire) || wire.Code != types.CodeTryAgain {
		t.Errorf("DelegateStatus in process = %v, want the plugin's code 11", err)
	}

	// Read from the call's environment, as the runtime passed it.
	off := cmdArgs(dir, &stderr)
	off.Env = append(off.Env, "CNISUITE_NO_INPROCESS=1")
	if err := DelegateGC(ctx, off, "inproc", conf); err == nil || len(seen) != 1 {
		t.Errorf("with CNISUITE_NO_INPROCESS=1: err %v, plugin calls %d; want the binary started (and failing)", err, len(seen))
	}
	InProcess("inproc", "not-"+id, fake)
	if err := DelegateGC(ctx, cmdArgs(dir, &stderr), "inproc", conf); err == nil || len(seen) != 1 {
		t.Errorf("with another build ID: err %v, plugin calls %d; want the binary started (and failing)", err, len(seen))
	}
}
