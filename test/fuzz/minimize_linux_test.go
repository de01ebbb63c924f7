package fuzz

import (
	"os"
	"path/filepath"

	"cnisuite/test/fuzz/jsontree"
	"cnisuite/test/fuzz/mutate"
)

// minimizeBudget bounds the trials spent on one failing input.
const minimizeBudget = 300

// minimize drops the fields and list items of a failing input's
// configuration one at a time, keeping each removal after which the input
// still fails the same way (same signature), and returns the smallest
// configuration found, or nil when the text is not JSON. Each trial runs
// every verb again in the batch's world, from a clean data directory.
func (w *world) minimize(res *result) []byte {
	tree, err := jsontree.Parse(res.in.Config)
	if err != nil {
		return nil
	}
	sig := res.signature()
	best := res.in.Config
	for i, budget := 1, minimizeBudget; budget > 0; budget-- {
		trial, ok := mutate.Drop(tree, i)
		if !ok {
			break
		}
		text := jsontree.Marshal(trial)
		if w.failsAlike(res, text, sig) {
			tree, best = trial, text // slot i now holds the next value: try it
			continue
		}
		i++
	}
	return best
}

// failsAlike runs res's input with config text and reports whether it
// fails with the same signature.
func (w *world) failsAlike(res *result, text []byte, sig string) bool {
	if mutate.Unsafe(text) != "" {
		return false
	}
	if err := os.RemoveAll(filepath.Join(res.dir, "data")); err != nil {
		return false
	}
	in := res.in
	in.Config = text
	again := w.runInput(in, res.dir)
	return len(again.problems) > 0 && again.signature() == sig
}
