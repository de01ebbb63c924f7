// Package firewalld runs Debian's firewalld for a test: a private system
// bus (dbus-daemon with a permissive policy, listening on a socket in the
// test's temporary directory) and firewalld in a network namespace of the
// test's, with its system configuration copied to a temporary directory so
// that nothing under /etc/firewalld changes. Plugins the test runs find
// the bus through DBUS_SYSTEM_BUS_ADDRESS, set for the test's process.
// StartBus starts the bus alone, for a test that sends firewalld's
// signals itself (SignalReloaded).
//
// Only inside the sandbox: firewalld rewrites the ruleset of the namespace
// it runs in.
package firewalld

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnisuite/test/sandbox"
)

// Daemon is a running firewalld and its bus.
type Daemon struct {
	t       testing.TB
	netns   string // path of the network namespace firewalld runs in
	busAddr string
	log     string
}

// busConfig is a system bus that lets anyone own and call anything: the
// test is the only client.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
</busconfig>
`

// startWait bounds firewalld's start (it loads every zone and service).
const startWait = 60 * time.Second

// Start starts a bus and firewalld in the network namespace at netnsPath,
// waits until firewalld answers, and stops both when the test ends. The
// test fails (not skips) when firewalld is not installed and
// CNISUITE_REQUIRE_PRIVILEGED is 1. Each of settings ("FirewallBackend=iptables")
// replaces that key's line of the copy of firewalld.conf.
func Start(t testing.TB, netnsPath string, settings ...string) *Daemon {
	t.Helper()
	sandbox.Require(t)
	for _, tool := range []string{"dbus-daemon", "firewalld", "firewall-cmd"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CNISUITE_REQUIRE_PRIVILEGED") == "1" {
				t.Fatalf("%s is not installed (scripts/install-deps.sh installs it)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	d := StartBus(t)
	d.netns = netnsPath
	dir := filepath.Dir(d.log)
	sysconf := filepath.Join(dir, "etc")
	if out, err := exec.Command("cp", "-a", "/etc/firewalld", sysconf).CombinedOutput(); err != nil {
		t.Fatalf("copying /etc/firewalld: %v\n%s", err, out)
	}
	configure(t, filepath.Join(sysconf, "firewalld.conf"), settings)
	fw := exec.Command("nsenter", "--net="+netnsPath, "--", "firewalld", "--nofork", "--nopid",
		"--system-config", sysconf, "--log-target", "file", "--log-file", d.log)
	fw.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+d.busAddr)
	d.start(fw, "firewalld")
	deadline := time.Now().Add(startWait)
	for {
		if out, err := d.try("--state"); err == nil && strings.TrimSpace(out) == "running" {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("firewalld did not answer within %v; its log:\n%s", startWait, d.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// StartBus starts only the private system bus (no firewalld), sets
// DBUS_SYSTEM_BUS_ADDRESS for the test, and stops the bus when the test
// ends: for a test that sends firewalld's signals itself.
func StartBus(t testing.TB) *Daemon {
	t.Helper()
	sandbox.Require(t)
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		if os.Getenv("CNISUITE_REQUIRE_PRIVILEGED") == "1" {
			t.Fatalf("dbus-daemon is not installed (scripts/install-deps.sh installs it)")
		}
		t.Skipf("dbus-daemon is not installed")
	}
	// Not t.TempDir: a socket path holds at most 107 bytes, and a
	// subtest's name goes into its temporary directory's.
	dir, err := os.MkdirTemp("", "fwd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d := &Daemon{t: t, busAddr: "unix:path=" + filepath.Join(dir, "bus"), log: filepath.Join(dir, "firewalld.log")}
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(busConfig, filepath.Join(dir, "bus"))), 0o644); err != nil {
		t.Fatal(err)
	}
	d.start(exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile"), "dbus-daemon")
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", d.busAddr)
	// The socket appears once the bus listens.
	for deadline := time.Now().Add(startWait); !fileExists(filepath.Join(dir, "bus")); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("dbus-daemon made no socket within %v", startWait)
		}
	}
	return d
}

// SignalReloaded sends firewalld's Reloaded signal on the bus, as
// firewalld does at the end of a reload.
// Equivalent to: dbus-send --system --type=signal /org/fedoraproject/FirewallD1 org.fedoraproject.FirewallD1.Reloaded
func (d *Daemon) SignalReloaded() {
	d.t.Helper()
	cmd := exec.Command("dbus-send", "--system", "--type=signal", "/org/fedoraproject/FirewallD1", "org.fedoraproject.FirewallD1.Reloaded")
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+d.busAddr)
	if out, err := cmd.CombinedOutput(); err != nil {
		d.t.Fatalf("dbus-send Reloaded: %v\n%s", err, out)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// start starts cmd and, when the test ends, stops it with SIGTERM (SIGKILL
// after 20 s) and waits for it.
func (d *Daemon) start(cmd *exec.Cmd, what string) {
	d.t.Helper()
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("starting %s: %v", what, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	d.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

// try runs firewall-cmd with args against the test's firewalld.
func (d *Daemon) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "firewall-cmd", args...)
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+d.busAddr)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Cmd runs firewall-cmd with args and returns its output, failing the
// test on an error.
func (d *Daemon) Cmd(args ...string) string {
	d.t.Helper()
	out, err := d.try(args...)
	if err != nil {
		d.t.Fatalf("firewall-cmd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Reload is `firewall-cmd --reload`: firewalld rebuilds its ruleset (and,
// with FlushAllOnReload, flushes everything first) and emits Reloaded.
func (d *Daemon) Reload() { d.t.Helper(); d.Cmd("--reload") }

// BusAddress is the address of the private system bus.
func (d *Daemon) BusAddress() string { return d.busAddr }

// Log returns firewalld's log so far.
func (d *Daemon) Log() string {
	data, _ := os.ReadFile(d.log)
	return string(data)
}

// configure sets each "Key=Value" of settings in the firewalld.conf at
// path: the key's line is replaced, or the setting appended.
func configure(t testing.TB, path string, settings []string) {
	t.Helper()
	if len(settings) == 0 {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for _, set := range settings {
		key, _, _ := strings.Cut(set, "=")
		found := false
		for i, l := range lines {
			if strings.HasPrefix(l, key+"=") {
				lines[i], found = set, true
			}
		}
		if !found {
			lines = append(lines, set)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
