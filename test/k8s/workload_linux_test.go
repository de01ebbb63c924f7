package k8s

import (
	"fmt"
	"strings"
	"time"
)

// The workload: two web pods behind Service web (ClusterIP and NodePort),
// web-a also on a host port, and a client pod behind Service client (so
// that it can reach itself through a Service: hairpin). Service same's
// node port, to the client, is web-b's host port too.
const (
	hostPort     = 18080
	nodePort     = 30080
	movedPort    = 8080  // web's port after the Service change
	movedNodePrt = 30081 // and its node port
	samePort     = 30090 // a node port (Service same) and a host port (web-b)
)

var webPods = []string{"web-a", "web-b"}

// workload is what deploy made: the pods' addresses and the Services'.
type workload struct {
	podIPs  map[string]string
	webIP   string // Service web's cluster IP
	selfIP  string // Service client's, selecting the client pod
	applied string // the manifest's path on the node
}

// pod renders a pod pinned to the node (no scheduler runs) serving its own
// name on port 80 with busybox httpd, ready once that page answers.
func pod(name, app string, hostPort int) map[string]any {
	port := map[string]any{"containerPort": 80}
	if hostPort != 0 {
		port["hostPort"] = hostPort
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": map[string]string{"app": app}},
		"spec": map[string]any{
			"nodeName": nodeName, "terminationGracePeriodSeconds": 1,
			"containers": []any{map[string]any{
				"name": "web", "image": busyboxImage, "imagePullPolicy": "Never",
				"command": []string{"sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 80 -h /www"},
				"ports":   []any{port},
				"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/", "port": 80},
					"periodSeconds": 2, "failureThreshold": 1},
			}},
		},
	}
}

// service renders a Service of the pods labelled app.
func service(name, app, typ string, ports map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"type": typ, "selector": map[string]string{"app": app}, "ports": []any{ports}},
	}
}

// deploy creates the workload and waits until every pod is Ready: their
// readiness probes, sent by the kubelet from the node to the pod's
// address, pass.
func (c *cluster) deploy() *workload {
	c.T.Helper()
	items := []any{
		pod("web-a", "web", hostPort), pod("web-b", "web", samePort), pod("client", "client", 0),
		service("web", "web", "NodePort", map[string]any{"port": 80, "targetPort": 80, "nodePort": nodePort}),
		service("client", "client", "ClusterIP", map[string]any{"port": 80, "targetPort": 80}),
		service("same", "client", "NodePort", map[string]any{"port": 80, "targetPort": 80, "nodePort": samePort}),
	}
	w := &workload{podIPs: map[string]string{}, applied: "/etc/kubernetes/workload.json"}
	c.WriteFile(w.applied, mustJSON(c.T, map[string]any{"apiVersion": "v1", "kind": "List", "items": items}), 0o600)
	c.Must("kubectl", "apply", "-f", w.applied)
	pods := append([]string{"client"}, webPods...)
	args := []string{"wait", "--for=condition=Ready", "--timeout=180s"}
	for _, p := range pods {
		args = append(args, "pod/"+p)
	}
	if out, err := c.Run(200*time.Second, "kubectl", args...); err != nil {
		c.T.Fatalf("pods not Ready: %v\n%s\n%s\nthe kubelet said:\n%s", err, out,
			c.Must("kubectl", "get", "pods", "-o", "wide"), c.kubelet.Tail(40))
	}
	for _, p := range pods {
		w.podIPs[p] = c.jsonpath("pod/"+p, "{.status.podIP}")
	}
	w.webIP = c.jsonpath("service/web", "{.spec.clusterIP}")
	w.selfIP = c.jsonpath("service/client", "{.spec.clusterIP}")
	c.T.Logf("pods %v, Service web %s, Service client %s", w.podIPs, w.webIP, w.selfIP)
	return w
}

// jsonpath reads a field of an object through kubectl.
func (c *cluster) jsonpath(object, path string) string {
	c.T.Helper()
	out := strings.TrimSpace(c.Must("kubectl", "get", object, "-o", "jsonpath="+path))
	if out == "" {
		c.T.Fatalf("%s has no %s", object, path)
	}
	return out
}

// moveService changes Service web's port and node port with its pods
// running (a JSON patch: a strategic merge would add a port, keyed by
// port number, instead of changing it).
func (c *cluster) moveService() {
	c.T.Helper()
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/ports/0/port","value":%d},{"op":"replace","path":"/spec/ports/0/nodePort","value":%d}]`,
		movedPort, movedNodePrt)
	c.Must("kubectl", "patch", "service", "web", "--type=json", "-p", patch)
}

// deleteAll deletes every pod and waits until they are gone.
func (c *cluster) deleteAll() {
	c.T.Helper()
	if out, err := c.Run(3*time.Minute, "kubectl", "delete", "pods", "--all", "--wait=true", "--timeout=150s"); err != nil {
		c.T.Fatalf("deleting the pods: %v\n%s\nthe kubelet said:\n%s", err, out, c.kubelet.Tail(40))
	}
}
