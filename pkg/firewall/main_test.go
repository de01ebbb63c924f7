package firewall

import (
	"testing"

	"cnisuite/test/fwtest"
)

func TestMain(m *testing.M) { fwtest.Main(m) }
