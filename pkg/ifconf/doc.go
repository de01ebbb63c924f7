// Package ifconf reads and writes the per-interface settings of a network
// namespace (net.ipv4.conf.<if>.*, net.ipv6.conf.<if>.*) and its forwarding
// switches: read over netlink, where the kernel reports them with every
// link, and written over netlink where the kernel takes them (IPv4) or
// under /proc/sys/net (IPv6), only when they differ. It acts in the
// namespace of the calling thread (see pkg/ns). Each helper names its
// sysctl equivalent.
package ifconf
