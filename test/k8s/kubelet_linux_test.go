package k8s

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"cnisuite/test/crinode"
	"cnisuite/test/nodens"
)

// busyboxImage is the image of every pod: a static busybox, no registry
// being reachable (pods say imagePullPolicy: Never).
const busyboxImage = "cnisuite.test/busybox:k8s"

// startKubelet starts the kubelet on containerd's CRI: cgroupfs without
// the QoS hierarchy (the pods' cgroups under the node's own root, which
// teardown removes), the node's pod CIDR, no eviction, and cgroup v1
// allowed (these machines have it).
func (c *cluster) startKubelet() *nodens.Daemon {
	c.T.Helper()
	off := "0%" // the kubelet ignores a threshold of 0%
	c.WriteFile(kubeletConf, mustJSON(c.T, map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
		"authentication": map[string]any{"anonymous": map[string]any{"enabled": true}, "webhook": map[string]any{"enabled": false}},
		"authorization":  map[string]any{"mode": "AlwaysAllow"},
		"cgroupDriver":   "cgroupfs", "cgroupsPerQOS": false, "cgroupRoot": c.CgroupRoot, "enforceNodeAllocatable": []string{},
		"failSwapOn": false, "failCgroupV1": false, "protectKernelDefaults": false,
		"containerRuntimeEndpoint": "unix://" + containerdSock,
		"podCIDR":                  podCIDR, "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1",
		"staticPodPath": "/etc/kubernetes/manifests", "fileCheckFrequency": "2s",
		"nodeStatusUpdateFrequency": "4s", "localStorageCapacityIsolation": false,
		"evictionHard": map[string]string{"memory.available": off, "nodefs.available": off, "nodefs.inodesFree": off,
			"imagefs.available": off, "imagefs.inodesFree": off},
		"imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99, "serializeImagePulls": false,
	}), 0o600)
	return c.Start("kubelet", "--config", kubeletConf, "--kubeconfig", adminConf, "--hostname-override", nodeName,
		"--node-ip", nodeAddr, "--root-dir", "/var/lib/kubelet")
}

// startKubeProxy starts kube-proxy in the given mode, with every conntrack
// setting it would write switched off, and waits until it has synced.
func (c *cluster) startKubeProxy(mode string) {
	c.T.Helper()
	c.mode = mode
	zero := 0
	c.WriteFile(kubeProxyConf, mustJSON(c.T, map[string]any{
		"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
		"clientConnection": map[string]any{"kubeconfig": adminConf},
		"mode":             mode, "clusterCIDR": "10.244.0.0/16", "hostnameOverride": nodeName,
		"healthzBindAddress": "127.0.0.1:10256", "metricsBindAddress": "127.0.0.1:10249",
		"conntrack": map[string]any{"maxPerCore": &zero, "min": &zero, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
		"iptables":  map[string]any{"minSyncPeriod": "1s", "syncPeriod": "30s"},
		"nftables":  map[string]any{"minSyncPeriod": "1s", "syncPeriod": "30s"},
	}), 0o600)
	c.kubeProxy = c.Start("kube-proxy", "--config", kubeProxyConf)
	c.await(c.kubeProxy, "kube-proxy synced", "curl", "-fsS", "http://127.0.0.1:10256/healthz")
}

// restartKubeProxy stops kube-proxy (SIGTERM, as a DaemonSet rollout does)
// and starts it again in the same mode.
func (c *cluster) restartKubeProxy() {
	c.T.Helper()
	c.kubeProxy.Stop()
	c.startKubeProxy(c.mode)
}

// importImages writes the pause image containerd's configuration pins and
// the pods' busybox image as a docker-archive, and imports both into the
// CRI's namespace.
func (c *cluster) importImages(containerd *nodens.Daemon) {
	c.T.Helper()
	conf, err := os.ReadFile(c.Path(containerdConf))
	if err != nil {
		c.T.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*sandbox\s*=\s*"([^"]+)"`).FindSubmatch(conf)
	if m == nil {
		c.T.Fatalf("containerd's configuration pins no sandbox image:\n%s", conf)
	}
	rootfs := c.busyboxRootfs()
	pause := []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait; done"}
	archive, err := crinode.Archive([]crinode.Image{
		{Ref: string(m[1]), Rootfs: rootfs, Cmd: pause},
		{Ref: busyboxImage, Rootfs: rootfs, Cmd: []string{"/bin/sh"}},
	})
	if err != nil {
		c.T.Fatal(err)
	}
	c.WriteFile("/run/images.tar", archive, 0o600)
	out, err := c.Run(2*time.Minute, "ctr", "--address", containerdSock, "-n", "k8s.io", "images", "import", "/run/images.tar")
	if err != nil {
		c.T.Fatalf("importing images: %v\ncontainerd said:\n%s", err, containerd.Tail(30))
	}
	c.T.Logf("images imported: %s", strings.TrimSpace(out))
}

// busyboxRootfs is a root filesystem of the static busybox with every
// applet linked in /bin.
func (c *cluster) busyboxRootfs() string {
	c.T.Helper()
	bb := "/bin/busybox"
	if f, err := elf.Open(bb); err != nil {
		c.T.Fatalf("%s: %v (install busybox-static: scripts/install-e2e-deps.sh)", bb, err)
	} else {
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				c.T.Fatalf("%s is dynamically linked: install busybox-static (scripts/install-e2e-deps.sh)", bb)
			}
		}
	}
	root := c.T.TempDir()
	for _, d := range []string{"bin", "etc", "proc", "sys", "dev", "tmp", "run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			c.T.Fatal(err)
		}
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		c.T.Fatal(err)
	}
	list, err := exec.Command(bb, "--list").Output()
	if err != nil {
		c.T.Fatalf("busybox --list: %v", err)
	}
	files := map[string]string{"bin/busybox": string(data), "etc/passwd": "root:x:0:0:root:/:/bin/sh\n", "etc/group": "root:x:0:\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o755); err != nil {
			c.T.Fatal(err)
		}
	}
	for _, applet := range strings.Fields(string(list)) {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil && !os.IsExist(err) {
			c.T.Fatal(err)
		}
	}
	return root
}
