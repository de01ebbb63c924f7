package mutate

import (
	"fmt"
	"math/rand/v2"
)

// flipBytes damages serialized text the way a broken writer or a bad
// template would: flipped bits, replaced, inserted or deleted bytes, a
// truncation or a repeated chunk. It returns the new text and what it did.
func flipBytes(r *rand.Rand, text []byte) ([]byte, string) {
	if len(text) == 0 {
		return []byte{byte(r.IntN(256))}, "one random byte"
	}
	out := append([]byte(nil), text...)
	i := r.IntN(len(out))
	switch r.IntN(6) {
	case 0:
		n := 1 + r.IntN(4)
		for range n {
			j := r.IntN(len(out))
			out[j] ^= 1 << r.IntN(8)
		}
		return out, fmt.Sprintf("%d bits flipped from offset %d", n, i)
	case 1:
		out[i] = byte(r.IntN(256))
		return out, fmt.Sprintf("byte %d replaced", i)
	case 2:
		b := []byte(`"{}[],:\0 ` + "\xff\xfe\x00")[r.IntN(13)]
		out = append(out[:i], append([]byte{b}, out[i:]...)...)
		return out, fmt.Sprintf("byte %q inserted at %d", b, i)
	case 3:
		out = append(out[:i], out[i+1:]...)
		return out, fmt.Sprintf("byte %d deleted", i)
	case 4:
		return out[:i], fmt.Sprintf("truncated to %d bytes", i)
	default:
		j := i + r.IntN(len(out)-i)
		chunk := append([]byte(nil), out[i:j+1]...)
		out = append(out[:j+1], append(chunk, out[j+1:]...)...)
		return out, fmt.Sprintf("bytes %d-%d repeated", i, j)
	}
}
