// Package fuzz is a black-box, structure-aware fuzzer of the built plugin
// binaries. It takes a rich, valid configuration of every plugin, mutates it
// on its JSON tree (keys dropped, values replaced by other types, huge
// numbers, odd strings, duplicate keys, null list elements, deep nesting) or
// on its bytes, runs every verb on it the way a runtime does, and checks the
// protocol (no Go stack, one well-formed error object on failure, results
// valid against the result schema) and that DEL leaves nothing behind.
//
// The pure parts (JSON tree, mutations, result validator, protocol checks)
// live in this package and are tested without root; the runner, which needs
// network namespaces, is in the privileged tests of this folder. See
// README.md for budgets and how to reproduce a failing input.
package fuzz
