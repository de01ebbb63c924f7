package invoke

import (
	"encoding/binary"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBuildIDOfThisBinary: the ID read from the first page is the one the
// go command reports.
func TestBuildIDOfThisBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid unavailable: %v", err)
	}
	got, err := buildID(exe)
	if err != nil || got != strings.TrimSpace(string(want)) {
		t.Errorf("buildID = %q, %v; go tool buildid says %q", got, err, want)
	}
}

// TestNoteBuildIDLayouts: 32- and 64-bit, both byte orders (the release's
// arm and s390x binaries), a GNU note before Go's; and files that are not
// what they should be give an error.
func TestNoteBuildIDLayouts(t *testing.T) {
	for _, c := range []struct {
		name    string
		is64    bool
		bo      binary.ByteOrder
		wantErr bool
	}{
		{"elf64 little-endian", true, binary.LittleEndian, false},
		{"elf32 little-endian", false, binary.LittleEndian, false},
		{"elf64 big-endian", true, binary.BigEndian, false},
	} {
		got, err := noteBuildID(fakeELF(c.is64, c.bo, "abc/def"))
		if err != nil || got != "abc/def" {
			t.Errorf("%s: noteBuildID = %q, %v; want abc/def", c.name, got, err)
		}
	}
	good := fakeELF(true, binary.LittleEndian, "abc/def")
	for name, b := range map[string][]byte{
		"empty":      nil,
		"not ELF":    []byte("#!/bin/sh\nexec /opt/cni/bin/real-host-local\n"),
		"truncated":  good[:80],
		"note shorn": good[:len(good)-4],
	} {
		if id, err := noteBuildID(b); err == nil {
			t.Errorf("%s: noteBuildID = %q, want an error", name, id)
		}
	}
}

// fakeELF returns an ELF header, one PT_NOTE program header, and a GNU
// note followed by Go's build ID note.
func fakeELF(is64 bool, bo binary.ByteOrder, id string) []byte {
	ehsize, phentsize := 52, 32
	if is64 {
		ehsize, phentsize = 64, 56
	}
	notes := append(note(bo, "GNU\x00", 3, "0123456789abcdef0123"), note(bo, "Go\x00\x00", 4, id)...)
	b := make([]byte, ehsize+phentsize)
	copy(b, "\x7fELF")
	b[4], b[5] = 1, 1
	if is64 {
		b[4] = 2
	}
	if bo == binary.BigEndian {
		b[5] = 2
	}
	ph, off := uint64(ehsize), uint64(ehsize+phentsize)
	if is64 {
		bo.PutUint64(b[32:], ph)
		bo.PutUint16(b[54:], uint16(phentsize))
		bo.PutUint16(b[56:], 1)
		bo.PutUint32(b[ph:], 4)
		bo.PutUint64(b[ph+8:], off)
		bo.PutUint64(b[ph+32:], uint64(len(notes)))
	} else {
		bo.PutUint32(b[28:], uint32(ph))
		bo.PutUint16(b[42:], uint16(phentsize))
		bo.PutUint16(b[44:], 1)
		bo.PutUint32(b[ph:], 4)
		bo.PutUint32(b[ph+4:], uint32(off))
		bo.PutUint32(b[ph+16:], uint32(len(notes)))
	}
	return append(b, notes...)
}

func note(bo binary.ByteOrder, name string, typ uint32, desc string) []byte {
	pad := func(s string) []byte { return append([]byte(s), make([]byte, (4-len(s)%4)%4)...) }
	h := make([]byte, 12)
	bo.PutUint32(h, uint32(len(name)))
	bo.PutUint32(h[4:], uint32(len(desc)))
	bo.PutUint32(h[8:], typ)
	return append(append(h, pad(name)...), pad(desc)...)
}

// FuzzNoteBuildID: any first page gives an ID or an error, never a panic.
func FuzzNoteBuildID(f *testing.F) {
	f.Add(fakeELF(true, binary.LittleEndian, "abc/def"))
	f.Add(fakeELF(false, binary.BigEndian, "x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = noteBuildID(b)
	})
}
