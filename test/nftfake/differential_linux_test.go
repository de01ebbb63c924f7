package nftfake_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"cnisuite/pkg/netfilter"
	"cnisuite/test/nftfake"
	"cnisuite/test/sandbox"
)

var update = flag.Bool("update", false, "rewrite testdata/kernel.golden with the kernel's answers (privileged)")

const golden = "testdata/kernel.golden"

// The fake is faithful: the same batches and reads (transcript_linux_test.go),
// run against the kernel (in a fresh network namespace) and against the
// fake, get the same answers — the handles of echoed and listed rules,
// comments, jump targets, chain uses, map elements, elements read by key,
// and the errno of each refused batch (after which both hold what they
// held before). With -update, the kernel's answers become the golden file
// TestFakeAnswersAsRecorded holds the fake to without root.
func TestFakeAnswersAsTheKernel(t *testing.T) {
	netns := sandbox.NewNS(t)
	var kernel *netfilter.Conn
	if err := netns.Do(func() (err error) { kernel, err = netfilter.Dial(); return err }); err != nil {
		t.Fatal(err)
	}
	defer kernel.Close()
	want := transcript(kernel)
	if *update {
		if err := os.WriteFile(golden, []byte(strings.Join(want, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	compare(t, want)
}

// The fake answers as the kernel answered when the golden file was
// recorded (Linux 6.18, by TestFakeAnswersAsTheKernel -update).
func TestFakeAnswersAsRecorded(t *testing.T) {
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
}

// compare runs the transcript on a fake and compares it with want.
func compare(t *testing.T, want []string) {
	t.Helper()
	fake := nftfake.New()
	fc := fake.Conn()
	defer fc.Close()
	got := transcript(fc)
	for i := range max(len(want), len(got)) {
		w, g := line(want, i), line(got, i)
		if w != g {
			t.Errorf("line %d:\n kernel: %s\n   fake: %s", i+1, w, g)
		}
	}
	if t.Failed() {
		t.Logf("the fake's ruleset at the end:\n%s", fake.Dump())
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(nothing)"
}
