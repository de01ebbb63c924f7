package firewall

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cnisuite/test/fwtest"
)

// TestLongContainerID: container IDs of 1,000 and 5,000 bytes (the
// reference accepts 5,000) get their masquerade, port mappings and spoof
// check on every backend, Check finds them and Remove leaves nothing; two
// owners whose IDs differ only after the first 1,000 bytes keep their own
// rules (the tag on iptables jumps is bounded by a digest, not cut short).
// iptables-restore refused the 1,000-byte ID with "Parameter too long".
func TestLongContainerID(t *testing.T) {
	ctx := context.Background()
	inEachBackend(t, func(t *testing.T, kind string, b Backend) {
		for _, n := range []int{1000, 5000} {
			port := fwtest.PortOwner
			port.ContainerID = strings.Repeat("c", n) + "1"
			bridge := fwtest.BridgeOwner
			bridge.ContainerID = port.ContainerID
			twin := port
			twin.ContainerID = strings.Repeat("c", n) + "2"
			pr := fwtest.PortRules(t, func(*PortMaps) {})
			twinRules := fwtest.PortRules(t, func(p *PortMaps) {
				p.ContainerV4 = fwtest.CIDR(t, "10.88.0.3/16")
				p.ContainerV6 = nil
				p.Mappings = []PortMapping{{HostPort: 9999, ContainerPort: 99, Protocol: "tcp"}}
			})
			set := map[Owner]Rules{port: pr, bridge: fwtest.BridgeRules(t), twin: twinRules}
			for _, o := range []Owner{port, bridge, twin} {
				if err := b.Ensure(ctx, o, set[o]); err != nil {
					t.Fatalf("Ensure(%d-byte ID, %s): %v", n, o.Plugin, err)
				}
				if err := b.Check(ctx, o, set[o]); err != nil {
					t.Errorf("Check(%d-byte ID, %s) after Ensure: %v", n, o.Plugin, err)
				}
			}
			if err := b.Remove(ctx, port); err != nil {
				t.Fatalf("Remove(%d-byte ID): %v", n, err)
			}
			if err := b.Check(ctx, twin, twinRules); err != nil {
				t.Errorf("Check(twin) after Remove of the owner whose ID shares its first %d bytes: %v", n, err)
			}
			if err := b.Check(ctx, port, pr); !errors.Is(err, ErrMissing) {
				t.Errorf("Check(%d-byte ID) after Remove = %v, want ErrMissing", n, err)
			}
			for _, o := range []Owner{bridge, twin} {
				if err := b.Remove(ctx, o); err != nil {
					t.Fatalf("Remove(%d-byte ID, %s): %v", n, o.Plugin, err)
				}
			}
			fwtest.AssertNoOwnerRules(t)
		}
	})
}
