package records

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"cnisuite/test/golden"
)

// TestFormatRecord pins the record file (docs/formats.md, "Records"): its
// path below the root, the modes of the directories and the file, and the
// JSON as Write writes it, every key set. A change here is a change of the
// format: update the golden file and the document together.
func TestFormatRecord(t *testing.T) {
	root := filepath.Join(t.TempDir(), "records")
	s := Store{Root: root}
	r := Record{
		Plugin: "portmap", Network: "net1", ContainerID: "c0ffee01", IfName: "eth0",
		Netns: "/run/netns/cni-1234", Args: "IgnoreUnknown=1;K8S_POD_NAME=web",
		Config: json.RawMessage(`{"cniVersion":"1.1.0","name":"net1","type":"portmap","capabilities":{"portMappings":true},` +
			`"runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]},` +
			`"prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.88.0.2/24","gateway":"10.88.0.1","interface":2}]}}`),
		Result: json.RawMessage(`{"cniVersion":"1.1.0"}`),
	}
	if err := s.Write(r); err != nil {
		t.Fatalf("Write: %v", err)
	}
	bare := Record{Plugin: "bridge", Network: "net1", ContainerID: "c0ffee01", IfName: "eth0",
		Config: json.RawMessage(`{"name":"net1","type":"bridge"}`)}
	if err := s.Write(bare); err != nil {
		t.Fatalf("Write(no netns, args, result): %v", err)
	}
	golden.Check(t, "format_record", golden.Tree(t, filepath.Dir(root)))
}
