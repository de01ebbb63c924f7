package link

import (
	"testing"

	"cnisuite/test/userns"
)

// TestReadPortMissingLink: a missing link is a not-found error that prints.
func TestReadPortMissingLink(t *testing.T) {
	n := userns.NewNS(t)
	err := n.Do(func() error {
		_, _, _, err := ReadPort("nosuchlink0")
		return err
	})
	if err == nil || !IsNotFound(err) {
		t.Fatalf("ReadPort(missing) = %v, want a not-found error", err)
	}
	if msg := err.Error(); msg == "" {
		t.Fatal("error prints empty")
	}
}
