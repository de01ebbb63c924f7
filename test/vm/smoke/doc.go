// Package smoke holds the chain smoke test that test/vm runs on Debian 12's
// kernel: bridge + host-local + tuning + portmap, with each firewall
// backend, through the runtime library, traffic through a mapped port, and
// nothing left after DEL. It runs in the host's sandbox too.
package smoke
