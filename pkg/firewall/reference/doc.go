// Package reference finds and removes what the reference CNI plugins wrote
// for one attachment, whichever of our backends runs the DEL, so that a
// node upgraded from them leaks nothing:
//
//   - portmap: rules commented with the container ID in the nftables
//     tables ip/ip6 cni_hostport; the iptables(-nft) chain CNI-DN-<hash>
//     and its jumps in CNI-HOSTPORT-DNAT.
//   - bridge: rules of inet cni_plugins_masquerade whose comment starts
//     with the attachment's hash; the spoof-check chains of table bridge
//     nat; the iptables(-nft) masquerade chain CNI-<hash> and its jumps in
//     POSTROUTING.
//
// Everything is found over netlink, so only iptables-nft state is seen; the
// reference's shared chains (CNI-HOSTPORT-*) and tables are left in place.
package reference
