package k8s

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cnisuite/test/crinode"
	"cnisuite/test/nodens"
	"cnisuite/test/sandbox"
)

// Paths of the cluster on the node.
const (
	containerdSock = "/run/containerd/containerd.sock"
	containerdConf = "/etc/containerd/config.toml"
	conflistPath   = "/etc/cni/net.d/10-kubernetes.conflist"
	kubeletConf    = "/etc/kubernetes/kubelet.json"
	kubeProxyConf  = "/etc/kubernetes/kube-proxy.json"
)

// components are the builds the cluster runs.
type components struct{ k8s, etcd, containerd crinode.Build }

// findComponents returns the builds of scripts/runtime-versions.env's
// versions, and skips the test, naming the script, when one is missing.
func findComponents(t *testing.T) components {
	t.Helper()
	root := sandbox.ModuleRoot(t)
	find := func(name, key string, programs ...string) crinode.Build {
		b, missing, err := crinode.FindBuild(root, name, key, programs...)
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) > 0 {
			t.Skipf("%s %s is not built (%v missing): run scripts/install-runtimes.sh %s (make deps does)", name, b.Version, missing, name)
		}
		return b
	}
	return components{
		k8s:        find("k8s", "K8S_VERSION", "kube-apiserver", "kube-controller-manager", "kube-proxy", "kubelet", "kubectl"),
		etcd:       find("etcd", "ETCD_VERSION", "etcd"),
		containerd: find("containerd", "CONTAINERD_VERSION", "containerd", "containerd-shim-runc-v2", "ctr"),
	}
}

// cluster is a node of one with its control plane running on it.
type cluster struct {
	*nodens.Node
	root      string // the module's checkout
	kubelet   *nodens.Daemon
	kubeProxy *nodens.Daemon
	mode      string // kube-proxy's
}

// startCluster starts, on a fresh node, containerd and etcd, then the API
// server, then the controller manager and the kubelet, and waits until the
// node is Ready.
func startCluster(t *testing.T, c components) *cluster {
	t.Helper()
	plugins, err := filepath.Abs(sandbox.Bin(t))
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{Node: newNode(t, plugins, []string{c.k8s.Bin, c.etcd.Bin, c.containerd.Bin}, kubeletGlobals), root: sandbox.ModuleRoot(t)}
	cl.writePKI()
	cl.writeConflist()
	cl.startOutside()
	containerd := cl.startContainerd()
	etcd := cl.Start("etcd", "--name", nodeName, "--data-dir", "/var/lib/etcd", "--unsafe-no-fsync", "--log-level", "warn",
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", nodeName+"=http://127.0.0.1:2380")
	cl.await(etcd, "etcd healthy", "curl", "-fsS", "http://127.0.0.1:2379/health")
	apiserver := cl.Start("kube-apiserver", apiserverArgs()...)
	cl.importImages(containerd)
	cl.await(apiserver, "the API server ready", "kubectl", "get", "--raw", "/readyz")
	// Only the EndpointSlice controller: kube-proxy reads the slices.
	cl.Start("kube-controller-manager", "--kubeconfig", adminConf, "--controllers", "endpointslice",
		"--leader-elect=false", "--bind-address", "127.0.0.1")
	cl.kubelet = cl.startKubelet()
	cl.await(cl.kubelet, "the node Ready", "kubectl", "wait", "--for=condition=Ready", "node/"+nodeName, "--timeout=5s")
	return cl
}

// await polls a command in the node until it succeeds, for at most two
// minutes, and fails the test with what d wrote when it does not (or d
// exits first).
func (c *cluster) await(d *nodens.Daemon, what string, name string, args ...string) {
	c.T.Helper()
	var last error
	ok := nodens.WaitFor(2*time.Minute, func() bool {
		_, last = c.Run(30*time.Second, name, args...)
		return last == nil || d.Exited()
	})
	if !ok || d.Exited() {
		c.T.Fatalf("waiting for %s: %v (%s exited: %v)\n%s said:\n%s", what, last, d.Name, d.Err(), d.Name, d.Tail(60))
	}
}

func apiserverArgs() []string {
	return []string{
		"--etcd-servers", "http://127.0.0.1:2379", "--secure-port", "6443", "--advertise-address", nodeAddr,
		"--tls-cert-file", pkiDir + "/apiserver.crt", "--tls-private-key-file", pkiDir + "/apiserver.key",
		"--client-ca-file", pkiDir + "/ca.crt", "--authorization-mode", "AlwaysAllow",
		// The node's name resolves nowhere: exec and logs go to its address.
		"--kubelet-preferred-address-types", "InternalIP",
		"--service-cluster-ip-range", serviceCIDR, "--service-node-port-range", "30000-32767",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", pkiDir + "/sa.pub", "--service-account-signing-key-file", pkiDir + "/sa.key",
		// Pods need no service account, and no token is mounted into them.
		"--disable-admission-plugins", "ServiceAccount",
		"--enable-priority-and-fairness=false", "--profiling=false",
	}
}

// writeConflist installs examples/kubernetes.conflist, at cniVersion 1.1.0
// so that containerd sends STATUS on every status poll of the kubelet (the
// node's Ready condition follows the answer).
func (c *cluster) writeConflist() {
	c.T.Helper()
	data, err := os.ReadFile(filepath.Join(c.root, "examples", "kubernetes.conflist"))
	if err != nil {
		c.T.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		c.T.Fatalf("examples/kubernetes.conflist: %v", err)
	}
	list["cniVersion"] = "1.1.0"
	c.WriteFile(conflistPath, mustJSON(c.T, list), 0o600)
}

// startContainerd starts containerd 2.x on test/e2e's configuration (package crinode: its
// CRI plugin on our conflist, the pause image pinned) and waits until it
// answers.
func (c *cluster) startContainerd() *nodens.Daemon {
	c.T.Helper()
	conf, err := crinode.ContainerdConfig(crinode.Containerd2V3, "/opt/cni/bin", filepath.Dir(conflistPath))
	if err != nil {
		c.T.Fatal(err)
	}
	c.WriteFile(containerdConf, []byte(conf), 0o600)
	d := c.Start("containerd", "--config", containerdConf)
	c.await(d, "containerd", "ctr", "--address", containerdSock, "version")
	return d
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// failureLog logs the end of what each daemon wrote when the test failed.
func failureLog(t testing.TB, daemons ...*nodens.Daemon) {
	if !t.Failed() {
		return
	}
	for _, d := range daemons {
		if d != nil {
			t.Logf("the last lines %s wrote:\n%s", d.Name, d.Tail(40))
		}
	}
}
