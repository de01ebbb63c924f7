package e2e

import (
	"strings"
	"testing"
	"time"
)

func TestConntrackLeft(t *testing.T) {
	table := strings.Join([]string{
		"tcp      6 89 TIME_WAIT src=127.0.0.1 dst=127.0.0.1 sport=45040 dport=18080 src=10.244.1.2 dst=10.244.1.1 sport=80 dport=45040 [ASSURED] mark=0 use=1",
		"tcp      6 431999 ESTABLISHED src=192.0.2.10 dst=10.244.1.2 sport=5 dport=80 src=10.244.1.2 dst=192.0.2.10 sport=80 dport=5 [ASSURED] mark=0 use=1",
		"udp      17 29 src=192.0.2.10 dst=192.0.2.10 sport=4 dport=18082 [UNREPLIED] src=10.244.1.2 dst=192.0.2.10 sport=53 dport=4 mark=0 use=1",
		"udp      17 29 src=192.0.2.10 dst=10.244.1.20 sport=4 dport=53 [UNREPLIED] src=10.244.1.20 dst=192.0.2.10 sport=53 dport=4 mark=0 use=1",
	}, "\n")
	fake := func(time.Duration, string, ...string) (string, error) { return table, nil }
	got := conntrackLeft(fake, "10.244.1.2")
	if len(got) != 2 || !strings.Contains(got[0], "ESTABLISHED") || !strings.Contains(got[1], "dport=18082") {
		t.Errorf("conntrackLeft(10.244.1.2) = %q, want the ESTABLISHED and the UDP entry of 10.244.1.2 only", got)
	}
}

func TestArgsProblem(t *testing.T) {
	want := []string{"K8S_POD_NAMESPACE=e2e", "K8S_POD_NAME=web"}
	tests := []struct {
		name, log, problem string
	}{
		{"ok", "bridge ADD sent=IgnoreUnknown=1;K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=web passed=K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=web\n", ""},
		{"never_called", "portmap ADD sent=K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=web passed=K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=web\n", "never called"},
		{"key_missing", "bridge ADD sent=K8S_POD_NAMESPACE=e2e passed=K8S_POD_NAMESPACE=e2e\n", "without K8S_POD_NAME=web"},
		{"prefix_is_not_the_key", "bridge ADD sent=K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=web2 passed=K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=web2\n", "without K8S_POD_NAME=web"},
		{"ignoreunknown_passed", "bridge ADD sent=K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=web;IgnoreUnknown=1 passed=K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=web;IgnoreUnknown=1\n", "IgnoreUnknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := argsProblem(tt.log, "bridge", "ADD", want)
			if (tt.problem == "") != (got == "") || !strings.Contains(got, tt.problem) {
				t.Errorf("argsProblem(%q) = %q, want a problem containing %q", tt.log, got, tt.problem)
			}
		})
	}
}
