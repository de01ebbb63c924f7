package golden

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// Tree lists every directory and file below root (root itself left out),
// in path order, for golden files that pin an on-disk layout: each entry's
// mode as ls prints it and its path relative to root, then a file's
// content byte for byte (see Content). A symbolic link is listed with its
// target, never followed.
func Tree(t testing.TB, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case d.IsDir():
			b.WriteString(info.Mode().String() + " " + rel + "/\n")
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			b.WriteString(info.Mode().String() + " " + rel + " -> " + target + "\n")
		default:
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.WriteString(info.Mode().String() + " " + rel + "\n" + Content(data))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", root, err)
	}
	return b.String()
}

// Content renders a file's bytes unambiguously: text made of printable
// characters and newlines as its lines, each after "\t| ", with
// "\t\\ no newline at end" when the last line has none; anything else (a
// carriage return, a control byte, invalid UTF-8) as one Go-quoted string
// after "\t= ". An empty file is "\t(empty)".
func Content(data []byte) string {
	s := string(data)
	if s == "" {
		return "\t(empty)\n"
	}
	if !plainText(s) {
		return "\t= " + strconv.Quote(s) + "\n"
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line == "" {
			continue
		}
		b.WriteString("\t| " + strings.TrimSuffix(line, "\n") + "\n")
	}
	if !strings.HasSuffix(s, "\n") {
		b.WriteString("\t\\ no newline at end\n")
	}
	return b.String()
}

func plainText(s string) bool {
	for _, r := range s {
		if r == unicode.ReplacementChar || r != '\n' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
