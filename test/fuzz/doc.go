// Package fuzz is a black-box, structure-aware fuzzer of the built plugin
// binaries. It takes a rich, valid configuration of every plugin, mutates it
// on its JSON tree (keys dropped, values replaced by other types, huge
// numbers, odd strings, duplicate keys, null list elements, deep nesting) or
// on its bytes, runs every verb on it the way a runtime does, and checks the
// protocol (no Go stack, one well-formed error object on failure, results
// valid against the result schema) and that DEL leaves nothing behind.
//
// This package holds the base configurations and builds the inputs; the
// pure parts live in subpackages tested without root: jsontree (the JSON
// tree), mutate (the mutations and the safety filter), protocol (the
// protocol checks and the result validator). The runner, which needs
// network namespaces, is in the privileged tests of this folder. See
// README.md for budgets and how to reproduce a failing input.
package fuzz
