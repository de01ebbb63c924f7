package invoke

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/pkg/undo"
)

// writePlugin writes an executable shell script standing in for a plugin.
func writePlugin(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(a, "ipam"), 0o755); err != nil { // a directory never wins
		t.Fatal(err)
	}
	writePlugin(t, b, "ipam", "exit 0")
	got, err := Find("ipam", a+":"+b)
	if err != nil || got != filepath.Join(b, "ipam") {
		t.Fatalf("Find = %q, %v; want %s", got, err, filepath.Join(b, "ipam"))
	}
	for _, bad := range []string{"", "../ipam", "a/b", "..", "missing"} {
		if _, err := Find(bad, a+":"+b); !errors.Is(err, types.ErrInvalidConfig) {
			t.Errorf("Find(%q) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func cmdArgs(dir string, stderr *bytes.Buffer) *skel.CmdArgs {
	return &skel.CmdArgs{
		Path:   dir,
		Env:    []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_PATH=" + dir, "PATH=/usr/bin:/bin"},
		Stderr: stderr,
	}
}

func TestDelegateAddPassesEnvStdinAndStderr(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "ipam", `
echo "cmd=$CNI_COMMAND cid=$CNI_CONTAINERID" >&2
read conf
case "$conf" in *'"name":"n1"'*) ;; *) exit 3;; esac
echo '{"ips":[{"address":"10.0.0.5/24","gateway":"10.0.0.1"}]}'
`)
	var stderr bytes.Buffer
	r, err := DelegateAdd(context.Background(), cmdArgs(dir, &stderr), "ipam", []byte(`{"cniVersion":"1.0.0","name":"n1"}`+"\n"))
	if err != nil {
		t.Fatalf("DelegateAdd: %v", err)
	}
	if r.CNIVersion != "1.0.0" || len(r.IPs) != 1 || r.IPs[0].Address.String() != "10.0.0.5/24" {
		t.Fatalf("result = %+v", r)
	}
	if got := stderr.String(); got != "cmd=ADD cid=c1\n" {
		t.Fatalf("delegate stderr = %q", got)
	}
}

func TestDelegateCommandReplaced(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "ipam", `[ "$CNI_COMMAND" = DEL ] || exit 9`)
	var stderr bytes.Buffer
	if err := DelegateDel(context.Background(), cmdArgs(dir, &stderr), "ipam", []byte(`{}`)); err != nil {
		t.Fatalf("DelegateDel: %v", err)
	}
}

func TestDelegateErrorPassesThrough(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "ipam", `echo '{"code":11,"msg":"pool busy","details":"retry"}'; exit 1`)
	writePlugin(t, dir, "crash", `echo "segfault-ish" >&2; exit 2`)
	var stderr bytes.Buffer
	err := DelegateCheck(context.Background(), cmdArgs(dir, &stderr), "ipam", []byte(`{}`))
	var wire *types.Error
	if !errors.As(err, &wire) || wire.Code != 11 || wire.Msg != "pool busy" {
		t.Fatalf("error = %#v, want the delegate's code 11", err)
	}
	err = DelegateGC(context.Background(), cmdArgs(dir, &stderr), "crash", []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "segfault-ish") || types.Code(err) != types.CodeInternal {
		t.Fatalf("crash error = %v (code %d), want its stderr and code 999", err, types.Code(err))
	}
}

func TestDelegateBadResult(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "ipam", `echo 'not json'`)
	var stderr bytes.Buffer
	_, err := DelegateAdd(context.Background(), cmdArgs(dir, &stderr), "ipam", []byte(`{"cniVersion":"1.0.0"}`))
	if !errors.Is(err, types.ErrDecoding) {
		t.Fatalf("error = %v, want ErrDecoding", err)
	}
	if err := DelegateStatus(context.Background(), cmdArgs(dir, &stderr), "missing", []byte(`{}`)); !errors.Is(err, types.ErrInvalidConfig) {
		t.Fatalf("missing delegate: %v", err)
	}
}

// A delegate whose binary is being written (an upgrade replacing it in
// place) fails exec with ETXTBSY: Delegate retries, and then returns an
// error that is ETXTBSY for errors.Is (it matched the message text before).
// A write that ends during the retries lets the call through.
func TestDelegateTextBusy(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "busy", `echo '{}'`)
	f, err := os.OpenFile(filepath.Join(dir, "busy"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Delegate(context.Background(), cmdArgs(dir, nil), "DEL", "busy", []byte(`{}`))
	if !errors.Is(err, syscall.ETXTBSY) {
		t.Errorf("Delegate while the binary is open for writing = %v, want ETXTBSY", err)
	}
	time.AfterFunc(300*time.Millisecond, func() { f.Close() })
	if _, err := Delegate(context.Background(), cmdArgs(dir, nil), "DEL", "busy", []byte(`{}`)); err != nil {
		t.Errorf("Delegate with the write ending during the retries = %v, want success", err)
	}
}

// AddIPAM pushes the lease's release as soon as the IPAM plugin granted
// one, so that a result ADD cannot use (no address) is released by the
// caller's undo.
func TestAddIPAMPushesRelease(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	writePlugin(t, dir, "ipam", `echo "$CNI_COMMAND" >>`+log+`
[ "$CNI_COMMAND" = ADD ] && echo '{"cniVersion":"1.0.0","ips":[]}'
exit 0`)
	var stderr bytes.Buffer
	a := cmdArgs(dir, &stderr)
	a.StdinData = []byte(`{"cniVersion":"1.0.0","name":"n1"}`)
	var u undo.Stack
	if _, err := AddIPAM(context.Background(), a, "ipam", "1.0.0", &u); !errors.Is(err, types.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "missing IP config") {
		t.Fatalf("AddIPAM of a result without addresses = %v, want invalid config", err)
	}
	if err := u.Run(); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if calls, _ := os.ReadFile(log); string(calls) != "ADD\nDEL\n" {
		t.Errorf("IPAM plugin calls %q, want ADD then its release (DEL)", calls)
	}
}
