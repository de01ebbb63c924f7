// Package k8s runs a Kubernetes node of one on our plugins, inside the
// sandbox: etcd, kube-apiserver, kube-controller-manager (for EndpointSlices
// only), the kubelet on containerd 2.x's CRI with examples/kubernetes.conflist,
// and kube-proxy, once in iptables mode and once in nftables mode. The
// programs are those scripts/install-runtimes.sh builds from the Go module
// proxy at the versions of scripts/runtime-versions.env; without them the
// test skips and names the script.
//
// Its tests drive real traffic (ClusterIP from the node and from a pod,
// NodePort, hostPort, hairpin to a Service selecting the caller) and check
// what the kubelet and kube-proxy do to the machine: the global kernel
// settings they write are masked in the node's own mount namespace, and the
// machine's values are compared before and after the run.
package k8s
