package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// critestFocus selects cri-tools' specs about pod networking and sandboxes.
const critestFocus = "networking|PodSandbox"

// critestImages names the test's images for critest: its defaults are in
// a registry no test machine reaches. critest pulls an image only when
// ImageStatus does not find it, and importImages put these in the store.
const critestImages = `defaultTestContainerImage: ` + busyboxImage + `
webServerTestImage: ` + webImage + `
`

// runCritest runs cri-tools' critest (built by scripts/install-runtimes.sh)
// inside the node against the runtime, focused on networking and pod
// sandboxes: every spec it runs passes, on our plugins.
func runCritest(n *criNode) {
	n.useCRI(n.flavor.binDir(), criConfDir)
	rt := findRuntime(n.T, "critest", "critest")
	const images = "/run/e2e/critest-images.yaml"
	n.WriteFile(images, []byte(critestImages), 0o644)
	endpoint := "unix://" + n.flavor.socket()
	// critest's pods name no cgroup parent: the runtime's default one.
	parent, skip := n.flavor.critest()
	n.T.Cleanup(func() { n.Reap(parent) })
	args := []string{"--runtime-endpoint", endpoint, "--image-endpoint", endpoint,
		"--test-images-file", images, "--ginkgo.focus", critestFocus, "--ginkgo.no-color"}
	if skip != "" {
		args = append(args, "--ginkgo.skip", skip)
	}
	out, err := n.Run(15*time.Minute, rt.Bin+"/critest", args...)
	ran, summary := critestSummary(out)
	n.T.Logf("critest %s --ginkgo.focus %q --ginkgo.skip %q against %s: %s", rt.Version, critestFocus, skip, n.flavor.name(), summary)
	if err != nil || ran == 0 {
		n.T.Errorf("critest failed (%d specs ran): %v\n%s", ran, err, critestTail(out))
	}
}

var critestRan = regexp.MustCompile(`Ran (\d+) of (\d+) Specs.*`)

// critestSummary returns how many specs critest ran and its summary lines.
func critestSummary(out string) (int, string) {
	m := critestRan.FindStringSubmatch(out)
	if m == nil {
		return 0, "no summary"
	}
	ran, _ := strconv.Atoi(m[1]) // the pattern matched digits
	summary := m[0]
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Passed") && strings.Contains(line, "Failed") {
			summary += "; " + strings.TrimSpace(line)
		}
	}
	return ran, summary
}

// critestTail is the end of critest's output, where the failures are summarized.
func critestTail(out string) string {
	const keep = 8000
	if len(out) > keep {
		return "…" + out[len(out)-keep:]
	}
	return out
}
