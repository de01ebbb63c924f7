package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/records"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/test/golden"
)

// fakeHost records host calls.
type fakeHost struct {
	localnet []string
	flushed  []string
	noRoute  bool // the node routes no container address
	// localnetErr is what EnableLocalnet fails with, when not nil.
	localnetErr error
	// localnetOn is what LocalnetOn answers.
	localnetOn bool
}

func (h *fakeHost) EnableLocalnet(ip net.IP, holder string) error {
	if h.noRoute {
		return fmt.Errorf("%w (%s)", errNoRoute, ip)
	}
	if h.localnetErr != nil {
		return h.localnetErr
	}
	h.localnet = append(h.localnet, ip.String())
	return nil
}

func (h *fakeHost) ReleaseLocalnet(holder string) error { return nil }

func (h *fakeHost) LocalnetOn(ip net.IP) bool { return h.localnetOn }

func (h *fakeHost) FlushUDP(v4 bool, ports []portSpan) error {
	fam := "v6"
	if v4 {
		fam = "v4"
	}
	h.flushed = append(h.flushed, fmt.Sprintf("%s %v", fam, ports))
	return nil
}

type harness struct {
	fw     *firewall.Fake
	host   *fakeHost
	kinds  []string // backend kinds asked for
	stderr string   // of the last run
	// records is the records' directory, made at the first run.
	records string
}

func newHarness(kind string) *harness {
	return &harness{fw: firewall.NewFake(kind), host: &fakeHost{}}
}

// run runs one verb in-process through the skel.
func (h *harness) run(t *testing.T, command, conf string, env ...string) (string, *types.Error) {
	t.Helper()
	if h.records == "" {
		h.records = t.TempDir()
	}
	p := &plugin{host: h.host, records: records.Store{Root: h.records}, newBackend: func(ctx context.Context, kind string) (firewall.Backend, error) {
		h.kinds = append(h.kinds, kind)
		if kind == "" { // as firewall.New: choosing checks that the choice is usable
			if err := h.fw.Usable(ctx); err != nil {
				return nil, err
			}
		}
		return h.fw, nil
	}}
	sp := &skel.Plugin{Name: "portmap", Add: p.Add, Check: p.Check, Del: p.Del, GC: p.GC, Status: p.Status}
	base := []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=ctr1", "CNI_NETNS=/nonexistent/netns",
		"CNI_IFNAME=eth0", "CNI_PATH=/nonexistent"}
	var stdout, stderr bytes.Buffer
	code := sp.Run(append(base, env...), strings.NewReader(conf), &stdout, &stderr)
	h.stderr = stderr.String()
	if code != 0 {
		var e types.Error
		if err := json.Unmarshal(stdout.Bytes(), &e); err != nil {
			t.Fatalf("%s: exit %d, stdout %q: %v", command, code, stdout.String(), err)
		}
		return "", &e
	}
	return stdout.String(), nil
}

const prevDual = `"prevResult":{"cniVersion":"1.0.0",
 "interfaces":[{"name":"cni0"},{"name":"veth1"},{"name":"eth0","sandbox":"/run/netns/x"},{"name":"eth1","sandbox":"/run/netns/x"}],
 "ips":[{"address":"10.99.0.9/24","interface":3},{"address":"10.88.0.2/16","interface":2},{"address":"10.88.0.3/16","interface":2},
        {"address":"fd00:88::2/64","interface":2}]}`

func conf(extra string) string {
	return `{"cniVersion":"1.0.0","name":"net1","type":"portmap"` + extra + `,` + prevDual + `}`
}

const maps = `,"runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},{"hostPort":5353,"containerPort":53,"protocol":"udp"}]}`

func TestAddRules(t *testing.T) {
	tests := []struct {
		name, extra string
		kinds       []string
	}{
		{"dual", maps, []string{firewall.KindNFTables, firewall.KindIPTables}},
		{"hostip", `,"runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp","hostIP":"192.0.2.1"},` +
			`{"hostPort":8081,"containerPort":81,"protocol":"TCP","hostIP":"::"},{"hostPort":53,"containerPort":53,"protocol":"udp","hostIP":"2001:db8::1"}]}`,
			[]string{firewall.KindNFTables, firewall.KindIPTables}},
		{"snat_off", `,"snat":false` + maps, []string{firewall.KindNFTables, firewall.KindIPTables}},
		{"masqall", `,"masqAll":true` + maps, []string{firewall.KindNFTables, firewall.KindIPTables}},
		{"conditions_nft", `,"conditionsV4":["ip","saddr","!=","192.0.2.0/24"],"conditionsV6":["ip6","saddr","!=","2001:db8::/32"]` + maps, []string{firewall.KindNFTables}},
		{"conditions_ipt", `,"conditionsV4":["!","-s","192.0.2.0/24"]` + maps, []string{firewall.KindIPTables}},
		{"markbit", `,"markMasqBit":5` + maps, []string{firewall.KindIPTables}},
		{"external_mark", `,"externalSetMarkChain":"KUBE-MARK-MASQ"` + maps, []string{firewall.KindIPTables}},
		{"ranges", `,"allowPortRanges":true,"runtimeConfig":{"portMappings":[{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":101},` +
			`{"hostPort":5000,"containerPort":5000,"protocol":"udp","range":10,"hostIP":"192.0.2.1"},{"hostPort":53,"containerPort":53,"protocol":"udp"}]}`,
			[]string{firewall.KindNFTables, firewall.KindIPTables}},
		{"static_runtimeconfig_v4only", `,"runtimeConfig":{"portMappings":[{"hostPort":9000,"containerPort":90,"protocol":"sctp","hostIP":"0.0.0.0"}]}`,
			[]string{firewall.KindNFTables}},
	}
	for _, tc := range tests {
		for _, kind := range tc.kinds {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				h := newHarness(kind)
				out, e := h.run(t, "ADD", conf(tc.extra))
				if e != nil {
					t.Fatalf("ADD: %+v", e)
				}
				if !strings.Contains(out, `"10.88.0.2/16"`) {
					t.Errorf("ADD output %s does not pass prevResult on", out)
				}
				golden.Check(t, "add_"+tc.name+"."+kind, h.fw.Dump()+"# localnet "+strings.Join(h.host.localnet, ",")+
					"\n# udp flush "+strings.Join(h.host.flushed, "; ")+"\n")
			})
		}
	}
}

func TestVerbs(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	if _, e := h.run(t, "ADD", conf(maps)); e != nil {
		t.Fatalf("ADD: %+v", e)
	}
	if _, e := h.run(t, "CHECK", conf(maps)); e != nil {
		t.Errorf("CHECK after ADD: %+v", e)
	}
	changed := strings.Replace(maps, "8080", "8081", 1)
	if _, e := h.run(t, "CHECK", conf(changed)); e == nil {
		t.Errorf("CHECK with other mappings succeeded, want an error")
	}
	// DEL without portMappings and without prevResult still removes, and
	// flushes the UDP flows of the host ports the rules held.
	h.host.flushed = nil
	if _, e := h.run(t, "DEL", `{"cniVersion":"1.0.0","name":"net1","type":"portmap"}`); e != nil {
		t.Fatalf("DEL: %+v", e)
	}
	if got := h.fw.Owners(); len(got) != 0 {
		t.Errorf("after DEL, owners %v remain", got)
	}
	if got := strings.Join(h.host.flushed, "; "); got != "v4 [5353]; v6 [5353]" {
		t.Errorf("DEL without portMappings flushed UDP %q, want %q", got, "v4 [5353]; v6 [5353]")
	}
	if _, e := h.run(t, "DEL", `{"cniVersion":"1.0.0","name":"net1","type":"portmap"}`); e != nil {
		t.Errorf("second DEL: %+v", e)
	}
}

// TestRangeVerbs: a UDP range's conntrack entries are flushed for the
// whole range, on ADD and on a DEL that reads the range back from the
// rules; CHECK finds a range with another end missing; another
// attachment's port inside the range is refused with code 11; a shifted
// range (8000-8002 to 9000-9002) is refused with code 7 saying why, and
// nothing is written.
func TestRangeVerbs(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	h.fw.Conflicts = true
	ranged := `,"allowPortRanges":true,"runtimeConfig":{"portMappings":[{"hostPort":5000,"containerPort":5000,"protocol":"udp","range":10}]}`
	if _, e := h.run(t, "ADD", conf(ranged)); e != nil {
		t.Fatalf("ADD: %+v", e)
	}
	if got := strings.Join(h.host.flushed, "; "); got != "v4 [5000-5009]; v6 [5000-5009]" {
		t.Errorf("ADD flushed UDP %q, want the whole range in each family", got)
	}
	if _, e := h.run(t, "CHECK", conf(ranged)); e != nil {
		t.Errorf("CHECK after ADD: %+v", e)
	}
	if _, e := h.run(t, "CHECK", conf(strings.Replace(ranged, `"range":10`, `"range":11`, 1))); e == nil || e.Code != types.CodeUnknownContainer {
		t.Errorf("CHECK of a longer range = %+v, want code 3", e)
	}
	inside := `,"runtimeConfig":{"portMappings":[{"hostPort":5009,"containerPort":53,"protocol":"udp"}]}`
	if _, e := h.run(t, "ADD", conf(inside), "CNI_CONTAINERID=ctr2"); e == nil || e.Code != types.CodeTryAgain {
		t.Errorf("ADD of a port inside another attachment's range = %+v, want code 11", e)
	}
	shifted := `,"allowPortRanges":true,"runtimeConfig":{"portMappings":[{"hostPort":8000,"containerPort":9000,"protocol":"tcp","range":3}]}`
	calls := len(h.fw.Calls())
	if _, e := h.run(t, "ADD", conf(shifted), "CNI_CONTAINERID=ctr3"); e == nil || e.Code != types.CodeInvalidConfig ||
		!strings.Contains(e.Msg, "host ports 8000-8002 to container ports 9000-9002 is a shifted range, which is not supported") {
		t.Errorf("ADD of a shifted range = %+v, want code 7 naming the mapping and why", e)
	}
	if len(h.fw.Calls()) != calls {
		t.Errorf("ADD of a shifted range called the firewall: %q", h.fw.Calls()[calls:])
	}
	h.host.flushed = nil
	if _, e := h.run(t, "DEL", `{"cniVersion":"1.0.0","name":"net1","type":"portmap"}`); e != nil {
		t.Fatalf("DEL: %+v", e)
	}
	if got := strings.Join(h.host.flushed, "; "); got != "v4 [5000-5009]; v6 [5000-5009]" {
		t.Errorf("DEL without portMappings flushed UDP %q, want the whole range in each family", got)
	}
}

func TestGCKeepsValid(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	for _, id := range []string{"a", "b", "c"} {
		if _, e := h.run(t, "ADD", conf(maps), "CNI_CONTAINERID="+id); e != nil {
			t.Fatalf("ADD %s: %+v", id, e)
		}
	}
	gc := `{"cniVersion":"1.1.0","name":"net1","type":"portmap","cni.dev/valid-attachments":[{"containerID":"b","ifname":"eth0"}]}`
	if _, e := h.run(t, "GC", gc); e != nil {
		t.Fatalf("GC: %+v", e)
	}
	got := h.fw.Owners()
	if len(got) != 1 || got[0].ContainerID != "b" {
		t.Errorf("after GC, owners = %v, want only b", got)
	}
}

func TestStatus(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	for _, st := range []string{
		`{"cniVersion":"1.1.0","name":"net1","type":"portmap"}`,
		`{"cniVersion":"1.1.0","name":"net1","type":"portmap","backend":"nftables"}`,
	} {
		h.fw.Err = nil
		if _, e := h.run(t, "STATUS", st); e != nil {
			t.Errorf("STATUS %s: %+v", st, e)
		}
		h.fw.Err = types.Errorf(types.ErrNotAvailable, "no nftables")
		if _, e := h.run(t, "STATUS", st); e == nil || e.Code != 50 {
			t.Errorf("STATUS %s with an unusable backend = %+v, want code 50", st, e)
		}
	}
}

func TestPassThrough(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	out, e := h.run(t, "ADD", conf(""))
	if e != nil || !strings.Contains(out, "fd00:88::2/64") {
		t.Errorf("ADD without mappings = %q, %+v; want prevResult back", out, e)
	}
	if len(h.fw.Calls()) != 0 {
		t.Errorf("ADD without mappings touched the firewall: %v", h.fw.Calls())
	}
	if _, e := h.run(t, "ADD", `{"cniVersion":"1.0.0","name":"net1","type":"portmap"`+maps+`}`); e == nil || e.Code != 7 {
		t.Errorf("ADD without prevResult = %+v, want code 7", e)
	}
}

func TestConflictIsReported(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	h.fw.Err = types.Errorf(firewall.ErrConflict, "taken")
	_, e := h.run(t, "ADD", conf(maps))
	if e == nil || !strings.Contains(e.Msg, "taken") || e.Code != types.CodeTryAgain {
		t.Errorf("ADD with a conflict = %+v, want the conflict with code 11", e)
	}
	if !errors.Is(h.fw.Err, firewall.ErrConflict) {
		t.Fatal("unreachable")
	}
}

// CHECK finding a rule missing is code 3, as bridge's and host-local's
// CHECK finding a piece of the attachment gone.
func TestCheckMissingRuleCode(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	if _, e := h.run(t, "ADD", conf(maps)); e != nil {
		t.Fatal(e)
	}
	h.fw.Err = types.Errorf(firewall.ErrMissing, "rule gone")
	if _, e := h.run(t, "CHECK", conf(maps)); e == nil || e.Code != types.CodeUnknownContainer {
		t.Errorf("CHECK with a rule missing = %+v, want code 3", e)
	}
}

// A node without a route to the container yet (routes from a later plugin
// or a routing daemon): ADD keeps the mappings, as the reference does, and
// says on stderr that the 127.0.0.1 ones need a route.
func TestAddWithoutRouteToContainer(t *testing.T) {
	h := newHarness("nftables")
	h.host.noRoute = true
	if _, e := h.run(t, "ADD", conf(`,"snat":true`+maps)); e != nil {
		t.Fatalf("ADD without a route = %+v, want success", e)
	}
	if dump := h.fw.Dump(); !strings.Contains(dump, "8080") {
		t.Errorf("mappings missing after ADD without a route:\n%s", dump)
	}
	if !strings.Contains(h.stderr, "127.0.0.1 need a route to 10.88.0.2") {
		t.Errorf("stderr = %q, want a line saying 127.0.0.1 mappings need a route", h.stderr)
	}
}

func TestDescribeMappings(t *testing.T) {
	v4, _ := types.ParseCIDR("10.88.0.2/16")
	v6, _ := types.ParseCIDR("fd00::2/64")
	pm := &firewall.PortMaps{ContainerV4: v4, ContainerV6: v6, Mappings: []firewall.PortMapping{
		{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"},
		{HostPort: 53, ContainerPort: 5353, Protocol: "udp", HostIP: net.ParseIP("192.0.2.1")},
	}}
	got := strings.Join(describe(pm), "; ")
	want := "*:8080/tcp -> 10.88.0.2:80; 192.0.2.1:53/udp -> 10.88.0.2:5353; *:8080/tcp -> [fd00::2]:80"
	if got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}

// A mapping key the plugin does not know ("range", a typo) is no longer
// silent: ADD names it on stderr and in the per-call log, and maps what it
// knows.
func TestUnknownMappingKeysWarned(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	logFile := filepath.Join(t.TempDir(), "calls.log")
	c := conf(`,"logFile":"` + logFile + `","allowPortRanges":true,"runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},` +
		`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":3,"count":3,"hostPortEnd":8002,"HostIP":"0.0.0.0"}]}`)
	if _, err := h.run(t, "ADD", c); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	for _, k := range []string{"runtimeConfig.portMappings[1].count", "runtimeConfig.portMappings[1].hostPortEnd"} {
		if !strings.Contains(h.stderr, k) {
			t.Errorf("stderr %q does not name %s", h.stderr, k)
		}
		if data, _ := os.ReadFile(logFile); !strings.Contains(string(data), k) {
			t.Errorf("per-call log %q does not name %s", data, k)
		}
	}
	if strings.Contains(h.stderr, "portMappings[1].range") || strings.Contains(h.stderr, "portMappings[1].HostIP") {
		t.Errorf("stderr warns about range or HostIP, keys the plugin applies: %q", h.stderr)
	}
	if strings.Contains(h.stderr, "portMappings[0]") {
		t.Errorf("stderr names the mapping without unknown keys: %q", h.stderr)
	}
}

// TestFailedAddLeavesNoRules: an ADD whose rules were written but whose
// route_localnet failed fails with code 5 and removes the rules it wrote:
// nothing of the attachment stays committed.
func TestFailedAddLeavesNoRules(t *testing.T) {
	for _, kind := range []string{firewall.KindNFTables, firewall.KindIPTables} {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(kind)
			h.host.localnetErr = errors.New("route_localnet: read-only file system")
			if _, e := h.run(t, "ADD", conf(maps)); e == nil || e.Code != types.CodeIO {
				t.Fatalf("ADD with route_localnet failing = %+v, want code 5", e)
			}
			if dump := h.fw.Dump(); strings.Contains(dump, "10.88.0.2") {
				t.Errorf("the failed ADD left rules:\n%s", dump)
			}
		})
	}
}

// TestPortLimits: ranges and the number of host ports are the operator's
// (the network configuration's) to allow: a range without allowPortRanges,
// or more host ports than maxHostPorts (default 32768), is refused with
// code 7 naming the key and the limit, and the firewall is not called;
// runtimeConfig, which pod authors may set, cannot raise either.
func TestPortLimits(t *testing.T) {
	every := `{"hostPort":1,"containerPort":1,"protocol":"udp","range":65535}`
	for _, tc := range []struct{ name, extra, want string }{
		{"range not allowed", `,"runtimeConfig":{"portMappings":[{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":3}]}`,
			"runtimeConfig.portMappings[0].range 3: port ranges are not allowed on this network (allowPortRanges"},
		{"every port of the node", `,"allowPortRanges":true,"runtimeConfig":{"portMappings":[` + every + `]}`,
			"65535 host ports, past maxHostPorts 32768"},
		{"limits from runtimeConfig", `,"runtimeConfig":{"allowPortRanges":true,"maxHostPorts":65535,"portMappings":[` + every + `]}`,
			"allowPortRanges"},
		{"the operator's limit", `,"allowPortRanges":true,"maxHostPorts":2,"runtimeConfig":{"portMappings":[` +
			`{"hostPort":80,"containerPort":80,"protocol":"tcp"},{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":2}]}`,
			"3 host ports, past maxHostPorts 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(firewall.KindNFTables)
			if _, e := h.run(t, "ADD", conf(tc.extra)); e == nil || e.Code != types.CodeInvalidConfig || !strings.Contains(e.Msg, tc.want) {
				t.Errorf("ADD = %+v, want code 7 naming %q", e, tc.want)
			}
			if calls := h.fw.Calls(); len(calls) > 0 {
				t.Errorf("the refused ADD called the firewall: %q", calls)
			}
		})
	}
}
