package k8s

import "os"

// The outside: a network namespace of the node's own on its "NIC", at the
// node's default gateway, where a web server answers with the address a
// connection came from.
const (
	outsideLink = "ext0" // the node's end, a port of eth0
	outsideAddr = "192.0.2.1"
	outsideEcho = outsideAddr + ":8000/cgi-bin/addr"
	outsideWWW  = "/run/outside"
)

// startOutside makes the outside and its server (the static busybox's
// httpd, with a CGI script printing REMOTE_ADDR): a pod's egress shows
// there as the node's address when it is masqueraded, and gets no answer
// when it is not (the outside has no route back to the pods). Equivalent
// to: ip netns add outside; ip link add ext0 type veth peer name ext1
// netns outside; ...
func (c *cluster) startOutside() {
	c.T.Helper()
	c.Must("ip", "netns", "add", "outside")
	c.Must("ip", "link", "add", outsideLink, "type", "veth", "peer", "name", "ext1", "netns", "outside")
	c.Must("ip", "link", "set", outsideLink, "master", "eth0", "up")
	c.Must("ip", "-n", "outside", "addr", "add", outsideAddr+"/24", "dev", "ext1")
	c.Must("ip", "-n", "outside", "link", "set", "ext1", "up")
	script := outsideWWW + "/cgi-bin/addr"
	// httpd listens on IPv6 too: an IPv4 peer is [::ffff:a.b.c.d].
	c.WriteFile(script, []byte(`#!/bin/sh
addr=${REMOTE_ADDR#[::ffff:}
printf 'Content-Type: text/plain\r\n\r\n%s\n' "${addr%]}"
`), 0o600)
	if err := os.Chmod(c.Path(script), 0o755); err != nil {
		c.T.Fatal(err)
	}
	httpd := c.Start("ip", "netns", "exec", "outside", "busybox", "httpd", "-f", "-p", "8000", "-h", outsideWWW)
	c.await(httpd, "the outside's web server", "curl", "-fsS", "--max-time", "3", "http://"+outsideEcho)
}
