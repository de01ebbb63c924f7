package main

import (
	"os"
	"testing"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/vethdel"
)

// TestMain answers the helper requests of the code under test, as main
// does: a DEL run inside this test binary hands its veth to it.
func TestMain(m *testing.M) {
	helper.Dispatch(vethdel.Helpers())
	os.Exit(m.Run())
}
