// Package resync holds the privileged tests of `cnisuite resync` and of
// STATUS code 51: a node's firewall or forwarding is reset by other
// software while a pod runs on bridge and portmap, and the pod's host
// port and masquerade must come back (issue 23).
package resync
