// Package k8s runs a Kubernetes node of one on our plugins, inside the
// sandbox: etcd, kube-apiserver (a throwaway CA, AlwaysAllow),
// kube-controller-manager (for EndpointSlices only), the kubelet on
// containerd 2.x's CRI with examples/kubernetes.conflist (at cniVersion
// 1.1.0, so STATUS answers feed the node's Ready condition), and kube-proxy,
// once in iptables mode and once in nftables mode, each on a fresh node.
// The programs are those scripts/install-runtimes.sh builds from the Go
// module proxy at the versions of scripts/runtime-versions.env; without
// them the test skips and names the script.
//
// With real traffic it checks ClusterIP (both backends, from the node and
// from a pod), NodePort, hostPort (127.0.0.1, the node's address, another
// pod), hairpin through a Service selecting the caller and pod egress
// masqueraded, before and after a kube-proxy restart, a Service moved to
// other ports, a pod's sandbox recreated and the kubelet restarted; the
// readiness probes pass; `cnisuite watch` beside kube-proxy repairs nothing
// through Service churn; a port that is both a NodePort and a hostPort is
// answered as docs/operations.md says; the node never leaves Ready; and
// deleting the pods leaves nothing of ours.
//
// The kubelet and kube-proxy write global kernel settings: the kubelet's
// are masked by files bind-mounted in the node's own mount namespace (and
// its writes checked there), kube-proxy's conntrack sizes are switched off
// in its configuration, and the machine's values are compared before and
// after the run.
//
//	scripts/install-runtimes.sh containerd etcd k8s
//	CNISUITE_BIN=$PWD/bin scripts/sandbox.sh go test -count=1 -v ./test/k8s
package k8s
