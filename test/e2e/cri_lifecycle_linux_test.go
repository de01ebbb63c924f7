package e2e

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criDualStack runs a web pod on the dual-stack variant of the conflist:
// PodSandboxStatus reports an IPv4 and an IPv6 address, and the page is
// fetched through both.
func criDualStack(n *criNode) {
	n.useCRI(n.flavor.binDir(), dualConfDir)
	web := n.mustRunPod(podConfig(uniqueName("dual"), n.cgroupParent), "/bin/httpd", "-f", "-p", "80", "-h", "/www")
	if len(web.ips) != 2 {
		n.T.Fatalf("PodSandboxStatus reports %v, want an IPv4 and an IPv6 address", web.ips)
	}
	requireIn(n.T, net.ParseIP(web.ips[0]), "10.244.1.0/24")
	requireIn(n.T, net.ParseIP(web.ips[1]), "fd00:10:244:1::/64")
	n.fetch(fmt.Sprintf("http://%s:80/", web.ips[0]))
	n.fetch(fmt.Sprintf("http://[%s]:80/", web.ips[1]))
	if err := n.stopAndRemove(web); err != nil {
		n.T.Fatal(err)
	}
	n.requirePodsGone(web)
}

// criLeftovers serves TCP and UDP host ports from a pod, checks that its
// veth, lease, rules, a UDP conntrack entry, its network namespace and its
// libcni cache entry can be seen, then stops and removes it: none of them
// is left.
func criLeftovers(n *criNode) {
	n.useCRI(n.flavor.binDir(), criConfDir)
	cfg := podConfig(uniqueName("gone"), n.cgroupParent)
	cfg.PortMappings = []*cri.PortMapping{
		{Protocol: cri.Protocol_TCP, ContainerPort: 80, HostPort: 18081},
		{Protocol: cri.Protocol_UDP, ContainerPort: 53, HostPort: 18082},
	}
	p := n.mustRunPod(cfg, "/bin/httpd", "-f", "-p", "80", "-h", "/www")
	ip := p.ips[0]
	n.fetch(fmt.Sprintf("http://%s:18081/", nodeAddr))
	n.Must("sh", "-c", fmt.Sprintf("echo ping | socat -u - UDP-SENDTO:%s:18082", nodeAddr))
	n.requireAttached(p.id, ip)
	if ct := conntrackLeft(n.Run, ip); !strings.Contains(strings.Join(ct, "\n"), "udp") {
		n.T.Errorf("no UDP conntrack entry names %s after a datagram to host port 18082:\n%s", ip, strings.Join(ct, "\n"))
	}
	if len(n.netnsLeft(p.netns)) == 0 {
		n.T.Errorf("the network namespace of pod %s is neither pinned nor held while it runs", p.id)
	}
	if !n.cacheNames(p.id) {
		n.T.Errorf("no libcni cache entry under /var/lib/cni names pod %s while it runs", p.id)
	}
	if err := n.stopAndRemove(p); err != nil {
		n.T.Fatal(err)
	}
	n.requirePodsGone(p)
}

// cacheNames tells whether containerd's libcni keeps a cached result
// naming the pod (so requirePodsGone looks where the cache is).
func (n *criNode) cacheNames(podID string) bool {
	out, err := n.Run(30*time.Second, "grep", "-rl", podID, "/var/lib/cni/results")
	return err == nil && strings.TrimSpace(out) != ""
}

// criConcurrentPods starts 20 pods at once through CRI, checks that their
// addresses are distinct and answer, then stops and removes them all at
// once: nothing is left.
func criConcurrentPods(n *criNode) {
	n.useCRI(n.flavor.binDir(), criConfDir)
	const count = 20
	pods := make([]*criPod, count)
	errs := parallel(count, func(i int) (err error) {
		pods[i], err = n.runPod(podConfig(uniqueName(fmt.Sprintf("many%d", i)), n.cgroupParent))
		return err
	})
	if errs != nil {
		n.T.Fatalf("starting %d pods at once: %v", count, errs)
	}
	seen := map[string]string{}
	for _, p := range pods {
		if other, dup := seen[p.ips[0]]; dup {
			n.T.Errorf("pods %s and %s both have %s", other, p.name, p.ips[0])
		}
		seen[p.ips[0]] = p.name
		requireIn(n.T, net.ParseIP(p.ips[0]), "10.244.1.0/24")
		if _, err := n.Run(30*time.Second, "ping", "-c", "1", "-W", "5", p.ips[0]); err != nil {
			n.T.Errorf("pod %s at %s does not answer: %v", p.name, p.ips[0], err)
		}
	}
	if errs := parallel(count, func(i int) error { return n.stopAndRemove(pods[i]) }); errs != nil {
		n.T.Errorf("stopping %d pods at once: %v", count, errs)
	}
	n.requirePodsGone(pods...)
}

// parallel runs f(0) … f(count-1) at once and joins their errors.
func parallel(count int, f func(i int) error) error {
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i := range count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
