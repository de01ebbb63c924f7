// Package link programs the host and container side of a bridged attachment
// over netlink: the bridge itself, veth pairs, bridge-port flags and VLANs,
// addresses and routes, and the configuration of a container interface from a
// CNI result. Each helper names its iproute2 equivalent.
//
// Helpers take a *netlink.Handle so that the caller decides which network
// namespace they act in; where a doc comment says so, a nil handle means the
// namespace of the calling thread. What a port's VLANs should be is
// pkg/vlanplan's; link applies it. Per-interface settings (accept_ra,
// arp_notify, forwarding) are pkg/ifconf's; helpers that use them act in
// the calling thread's namespace and must run inside it (see pkg/ns).
package link
