package main

import (
	"os"
	"testing"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/sitter"
)

// TestMain answers the helper requests of the code under test, as main
// does: a DEL run inside this test binary may start a sitter from it.
func TestMain(m *testing.M) {
	helper.Dispatch(helper.Set{sitter.HelperName: sitter.Serve})
	os.Exit(m.Run())
}
