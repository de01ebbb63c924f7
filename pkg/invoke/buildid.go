package invoke

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
)

// buildID returns the Go build ID of the executable at path: the content
// of its "Go" ELF note of type 4 (GO BUILDID), which the linker places in
// the first page of every Go binary, stripped or not. It is a hash of what
// the binary was built from and with, so two binaries with the same ID are
// the same build. Only the file's first 4 KiB are read.
func buildID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", err
	}
	return noteBuildID(head[:n])
}

var errNoBuildID = errors.New("no Go build ID in the first page")

// noteBuildID finds the Go build ID note in the program headers of an ELF
// file's first bytes, 32- or 64-bit, either byte order.
func noteBuildID(b []byte) (string, error) {
	if len(b) < 52 || string(b[:4]) != "\x7fELF" {
		return "", errNoBuildID
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if b[5] == 2 {
		bo = binary.BigEndian
	}
	// e_phoff, e_phentsize, e_phnum; p_type, p_offset, p_filesz.
	phoff, phentsize, phnum := uint64(bo.Uint32(b[28:])), int(bo.Uint16(b[42:])), int(bo.Uint16(b[44:]))
	offAt, sizeAt, word := 4, 16, 4
	if b[4] == 2 { // ELFCLASS64
		if len(b) < 64 {
			return "", errNoBuildID
		}
		phoff, phentsize, phnum = bo.Uint64(b[32:]), int(bo.Uint16(b[54:])), int(bo.Uint16(b[56:]))
		offAt, sizeAt, word = 8, 32, 8
	}
	for i := 0; i < phnum; i++ {
		ph := phoff + uint64(i*phentsize)
		if ph+uint64(sizeAt+word) > uint64(len(b)) {
			break
		}
		if bo.Uint32(b[ph:]) != 4 { // PT_NOTE
			continue
		}
		off, size := readWord(b[ph+uint64(offAt):], word, bo), readWord(b[ph+uint64(sizeAt):], word, bo)
		if off+size > uint64(len(b)) {
			continue
		}
		if id, ok := goNote(b[off:off+size], bo); ok {
			return id, nil
		}
	}
	return "", errNoBuildID
}

func readWord(b []byte, word int, bo binary.ByteOrder) uint64 {
	if word == 8 {
		return bo.Uint64(b)
	}
	return uint64(bo.Uint32(b))
}

// goNote walks the notes of one PT_NOTE segment for owner "Go", type 4.
func goNote(notes []byte, bo binary.ByteOrder) (string, bool) {
	align := func(n uint32) int { return int((n + 3) &^ 3) }
	for len(notes) >= 12 {
		namesz, descsz, typ := bo.Uint32(notes), bo.Uint32(notes[4:]), bo.Uint32(notes[8:])
		name, desc := 12, 12+align(namesz)
		end := desc + align(descsz)
		if end > len(notes) || desc+int(descsz) > len(notes) {
			return "", false
		}
		if typ == 4 && namesz == 4 && string(notes[name:name+4]) == "Go\x00\x00" {
			return string(notes[desc : desc+int(descsz)]), true
		}
		notes = notes[end:]
	}
	return "", false
}
