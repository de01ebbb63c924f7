package main

import (
	"strings"
	"testing"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/types"
)

func TestValidate(t *testing.T) {
	const head = `{"cniVersion":"1.0.0","name":"n","type":"portmap"`
	pm := func(entries string) string { return `,"runtimeConfig":{"portMappings":[` + entries + `]}` }
	const rhead = head + `,"allowPortRanges":true` // the operator allows ranges
	tests := []struct {
		name, conf string
		wantErr    []string // substrings, all present; none means valid
		wantKind   string
	}{
		{"defaults", head + `}`, nil, ""},
		{"host port zero", head + pm(`{"hostPort":0,"containerPort":80,"protocol":"tcp"}`) + `}`, []string{"hostPort 0: must be 1-65535"}, ""},
		{"host port too big", head + pm(`{"hostPort":70000,"containerPort":80,"protocol":"tcp"}`) + `}`, []string{"hostPort 70000"}, ""},
		{"container port", head + pm(`{"hostPort":80,"containerPort":-1,"protocol":"tcp"}`) + `}`, []string{"containerPort -1"}, ""},
		{"protocol", head + pm(`{"hostPort":80,"containerPort":80,"protocol":"icmp"}`) + `}`, []string{`protocol "icmp"`}, ""},
		{"host ip", head + pm(`{"hostPort":80,"containerPort":80,"protocol":"tcp","hostIP":"1.2.3"}`) + `}`, []string{`hostIP "1.2.3"`}, ""},
		{"every problem at once", head + pm(`{"hostPort":0,"containerPort":0,"protocol":"x"}`) + `,"markMasqBit":32}`,
			[]string{"hostPort 0", "containerPort 0", `protocol "x"`, "markMasqBit 32"}, ""},
		{"mark and external chain", head + `,"markMasqBit":3,"externalSetMarkChain":"X"}`, []string{"cannot specify both"}, ""},
		{"unknown backend", head + `,"backend":"ebtables"}`, []string{`backend "ebtables"`}, ""},
		{"nft conditions with iptables", head + `,"backend":"iptables","conditionsV4":["ip","saddr","1.2.3.4"]}`, []string{"conditionsV4"}, ""},
		{"ipt conditions with nftables", head + `,"backend":"nftables","conditionsV6":["!","-s","::1"]}`, []string{"conditionsV6"}, ""},
		{"external chain with nftables", head + `,"backend":"nftables","externalSetMarkChain":"KUBE-MARK-MASQ"}`, []string{"externalSetMarkChain"}, ""},
		{"nft conditions choose nftables", head + `,"conditionsV4":["ip","saddr","!=","1.2.3.4"]}`, nil, firewall.KindNFTables},
		{"ipt conditions choose iptables", head + `,"conditionsV4":["!","-s","1.2.3.4"]}`, nil, firewall.KindIPTables},
		{"injection in a condition", head + `,"conditionsV4":["ip saddr 1.1.1.1\nflush ruleset"]}`, []string{"must not contain a newline"}, ""},
		{"range", rhead + pm(`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":101}`) + `}`, nil, ""},
		{"range of one with other ports", rhead + pm(`{"hostPort":8000,"containerPort":80,"protocol":"tcp","range":1}`) + `}`, nil, ""},
		{"range zero", rhead + pm(`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":0}`) + `}`,
			[]string{"runtimeConfig.portMappings[0].range 0: must be at least 1"}, ""},
		{"range past 65535", rhead + pm(`{"hostPort":65530,"containerPort":65530,"protocol":"udp","range":7}`) + `}`,
			[]string{"runtimeConfig.portMappings[0].range 7: host ports 65530-65536 pass 65535"}, ""},
		{"range to other container ports", rhead + pm(`{"hostPort":8000,"containerPort":9000,"protocol":"tcp","range":3}`) + `}`,
			[]string{"runtimeConfig.portMappings[0].containerPort 9000", "host ports 8000-8002 to container ports 9000-9002",
				"shifted range", "not supported", "must equal hostPort 8000"}, ""},
		{"ranges overlap", rhead + pm(`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":10},`+
			`{"hostPort":80,"containerPort":80,"protocol":"tcp"},{"hostPort":8009,"containerPort":8009,"protocol":"tcp","range":2}`) + `}`,
			[]string{"runtimeConfig.portMappings[2] (host ports 8009-8010/tcp): overlaps runtimeConfig.portMappings[0] (8000-8009/tcp)"}, ""},
		{"range and single port overlap", rhead + pm(`{"hostPort":8005,"containerPort":80,"protocol":"tcp"},`+
			`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":10}`) + `}`,
			[]string{"runtimeConfig.portMappings[1] (host ports 8000-8009/tcp): overlaps runtimeConfig.portMappings[0] (8005/tcp)"}, ""},
		{"range every address and on ::", rhead + pm(`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":10},`+
			`{"hostPort":8005,"containerPort":8005,"protocol":"tcp","range":10,"hostIP":"::"}`) + `}`,
			[]string{"runtimeConfig.portMappings[1] (host ports 8005-8014/tcp): overlaps runtimeConfig.portMappings[0]"}, ""},
		{"ranges on 0.0.0.0 and ::", rhead + pm(`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":10,"hostIP":"0.0.0.0"},`+
			`{"hostPort":8005,"containerPort":8005,"protocol":"tcp","range":10,"hostIP":"::"}`) + `}`, nil, ""},
		{"ranges of other protocols or addresses", rhead + pm(`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":10},`+
			`{"hostPort":8000,"containerPort":8000,"protocol":"udp","range":10},{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":10,"hostIP":"192.0.2.1"}`) + `}`, nil, ""},
		{"range without allowPortRanges", head + pm(`{"hostPort":80,"containerPort":80,"protocol":"tcp"},{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":101}`) + `}`,
			[]string{"runtimeConfig.portMappings[1].range 101: port ranges are not allowed on this network (allowPortRanges"}, ""},
		{"range of one without allowPortRanges", head + pm(`{"hostPort":8000,"containerPort":80,"protocol":"tcp","range":1}`) + `}`, nil, ""},
		{"limits from runtimeConfig are ignored", head + `,"runtimeConfig":{"allowPortRanges":true,"maxHostPorts":70000,"portMappings":[` +
			`{"hostPort":1,"containerPort":1,"protocol":"udp","range":65535}]}}`,
			[]string{"portMappings[0].range 65535: port ranges are not allowed", "65535 host ports, past maxHostPorts 32768"}, ""},
		{"every port of the node by default", rhead + pm(`{"hostPort":1,"containerPort":1,"protocol":"udp","range":65535}`) + `}`,
			[]string{"runtimeConfig.portMappings: 65535 host ports, past maxHostPorts 32768 (the network configuration's limit"}, ""},
		{"past maxHostPorts", rhead + `,"maxHostPorts":100` + pm(`{"hostPort":80,"containerPort":80,"protocol":"tcp"},`+
			`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":100}`) + `}`,
			[]string{"runtimeConfig.portMappings: 101 host ports, past maxHostPorts 100"}, ""},
		{"at maxHostPorts", rhead + `,"maxHostPorts":101` + pm(`{"hostPort":80,"containerPort":80,"protocol":"tcp"},`+
			`{"hostPort":8000,"containerPort":8000,"protocol":"tcp","range":100}`) + `}`, nil, ""},
		{"maxHostPorts zero", head + `,"maxHostPorts":0}`, []string{"maxHostPorts 0: must be at least 1"}, ""},
		{"explicit nftables", head + `,"backend":"nftables","markMasqBit":31}`, nil, firewall.KindNFTables},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load([]byte(tc.conf))
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Load(%s) = %v, want success", tc.conf, err)
				}
				if kind, _ := c.backendKind(); kind != tc.wantKind {
					t.Errorf("backendKind() = %q, want %q", kind, tc.wantKind)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want errors %q", tc.conf, tc.wantErr)
			}
			if types.Code(err) != types.CodeInvalidConfig {
				t.Errorf("Load(%s) code = %d, want 7", tc.conf, types.Code(err))
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%s) = %v, want it to mention %q", tc.conf, err, w)
				}
			}
		})
	}
}

func TestContainerAddrs(t *testing.T) {
	c, err := Load([]byte(conf("")))
	if err != nil {
		t.Fatal(err)
	}
	prev, err := c.PrevResult()
	if err != nil {
		t.Fatal(err)
	}
	v4, v6 := containerAddrs(prev, "eth0")
	if v4.String() != "10.88.0.2/16" || v6.String() != "fd00:88::2/64" {
		t.Errorf("containerAddrs(eth0) = %v, %v; want 10.88.0.2/16, fd00:88::2/64", v4, v6)
	}
	v4, v6 = containerAddrs(prev, "eth1")
	if v4.String() != "10.99.0.9/24" || v6 != nil {
		t.Errorf("containerAddrs(eth1) = %v, %v; want 10.99.0.9/24, <nil>", v4, v6)
	}
}
