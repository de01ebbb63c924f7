package main

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/pkg/linkops"
	"cnisuite/pkg/skel"
	"cnisuite/plugins/meta/tuning/backup"
	"cnisuite/test/golden"
)

// The order in which ADD sets the link attributes, undoes them when a
// write fails, and DEL puts them back, without root: the links are a
// linkops.Fake, the sysctls files under a directory of the test's, the
// state files in another.

const restoreConf = `{"cniVersion":"1.0.0","name":"net","type":"tuning",` +
	`"mac":"02:00:00:00:00:99","promisc":true,"mtu":1400,"allmulti":true,"txQLen":42,` +
	`"sysctl":{"net.ipv4.conf.eth0.arp_ignore":"1"}}`

// fakeContainer returns a tuner over a fake eth0 and a sysctl tree
// holding arp_ignore = 0, and the configuration and arguments of an ADD.
func fakeContainer(t *testing.T) (*tuner, *linkops.Fake, *Config, *skel.CmdArgs, []backup.Setting) {
	t.Helper()
	sysRoot := t.TempDir()
	dir := filepath.Join(sysRoot, "net/ipv4/conf/eth0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "arp_ignore"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mac, _ := net.ParseMAC("0a:58:0a:00:00:05")
	links := linkops.NewFake(linkops.Attrs{Name: "eth0", MAC: mac, MTU: 1500, TxQLen: 1000, Up: true})
	c, err := Load([]byte(restoreConf), "")
	if err != nil {
		t.Fatal(err)
	}
	c.DataDir = t.TempDir()
	settings, err := c.Settings("eth0")
	if err != nil {
		t.Fatal(err)
	}
	a := &skel.CmdArgs{ContainerID: "c1", IfName: "eth0", Command: "ADD"}
	return &tuner{sysRoot: sysRoot, links: links}, links, c, a, settings
}

func TestAddDelRestoresInOrder(t *testing.T) {
	tu, links, c, a, settings := fakeContainer(t)
	before, _ := links.Get("eth0")
	after, err := tu.apply(c, a, settings)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if after.MTU != 1400 || after.MAC.String() != "02:00:00:00:00:99" || !after.Promisc || !after.Allmulti || after.TxQLen != 42 {
		t.Errorf("after ADD: %+v, want mac 02:00:00:00:00:99 mtu 1400 promisc allmulti txqueuelen 42", after)
	}
	st, err := backup.Store{Dir: c.DataDir}.Load(a.ContainerID, a.IfName)
	if err != nil || st == nil {
		t.Fatalf("state after ADD: %v, %v", st, err)
	}
	addLines := len(links.Lines())
	if err := tu.restore(st, a.IfName); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	got, _ := links.Get("eth0")
	if got.MAC.String() != before.MAC.String() || got.MTU != before.MTU || got.Promisc || got.Allmulti || got.TxQLen != 1000 {
		t.Errorf("after DEL: %+v, want %+v", got, before)
	}
	value, _ := os.ReadFile(filepath.Join(tu.sysRoot, "net/ipv4/conf/eth0/arp_ignore"))
	if strings.TrimSpace(string(value)) != "0" {
		t.Errorf("arp_ignore after DEL = %q, want 0", value)
	}
	lines := links.Lines()
	golden.Check(t, "add_del_restore", "# ADD\n"+strings.Join(lines[:addLines], "\n")+"\n# DEL\n"+strings.Join(lines[addLines:], "\n")+"\n")
}

func TestFailedAddUndoesLastFirst(t *testing.T) {
	tu, links, c, a, settings := fakeContainer(t)
	links.Fail = map[string]error{"ip link set dev eth0 txqueuelen 42": errors.New("refused")}
	if _, err := tu.apply(c, a, settings); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("ADD with txqueuelen refused = %v, want the refusal", err)
	}
	if st, err := (backup.Store{Dir: c.DataDir}).Load(a.ContainerID, a.IfName); st != nil || err != nil {
		t.Errorf("state after a failed first ADD = %+v, %v, want none", st, err)
	}
	value, _ := os.ReadFile(filepath.Join(tu.sysRoot, "net/ipv4/conf/eth0/arp_ignore"))
	if strings.TrimSpace(string(value)) != "0" {
		t.Errorf("arp_ignore after the failed ADD = %q, want 0", value)
	}
	golden.Check(t, "failed_add_undo", strings.Join(links.Lines(), "\n")+"\n")
}
