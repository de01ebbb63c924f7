package nftmodel

import (
	"errors"

	"golang.org/x/sys/unix"
)

// vanishTries bounds how often a call reads again and retries after what
// it read vanished under it.
const vanishTries = 3

// vanished reports whether err says that a table, chain, map, element or
// rule the call read went away before its transaction committed (ENOENT,
// from the transaction or from a listing): something reset the node's
// firewall in between (nft flush ruleset, iptables-restore, a repair
// writing the same chains again).
func vanished(err error) bool { return errors.Is(err, unix.ENOENT) }

// RetryVanished runs fn, which reads the kernel and then writes what it
// read, again while it fails because what it read vanished, at most
// vanishTries times in all: the next read sees the firewall as the reset
// left it, so a removal whose objects are all gone has nothing left to do
// and succeeds.
func RetryVanished(fn func() error) error {
	var err error
	for i := 0; i < vanishTries; i++ {
		if err = fn(); !vanished(err) {
			return err
		}
	}
	return err
}
