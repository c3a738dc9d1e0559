package doctest

import (
	"os/exec"
	"strings"
	"testing"
)

// serveArgs returns the arguments of the "bin/toolgate serve" lines of a
// shell block, split as bash splits them.
func serveArgs(t *testing.T, text string) [][]string {
	t.Helper()
	var all [][]string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		rest, ok := strings.CutPrefix(line, "bin/toolgate serve")
		if !ok {
			continue
		}
		out, err := exec.Command("bash", "-c", `set -- `+rest+`; printf '%s\0' "$@"`).Output()
		if err != nil {
			t.Fatalf("bash cannot split %q: %v", line, err)
		}
		all = append(all, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"))
	}
	return all
}

// TestGuideServeLines: the gateway starts and serves with the flags of the
// guides' bin/toolgate serve lines marked for this test, so that a flag
// renamed or a value no longer accepted shows here.
func TestGuideServeLines(t *testing.T) {
	n := 0
	for _, file := range newcomerDocs(t) {
		for _, b := range parseBlocks(file, readDoc(t, file)) {
			if !strings.Contains(b.marker, "TestGuideServeLines") {
				continue
			}
			lines := serveArgs(t, b.text)
			if len(lines) == 0 {
				t.Fatalf("%s:%d: the block has no bin/toolgate serve line", b.file, b.line)
			}
			for _, args := range lines {
				n++
				t.Run(strings.Join(args, " "), func(t *testing.T) {
					g := startGateway(t, "", args...)
					if status, body := g.api(t, "GET", "/healthz", ""); status != 200 {
						t.Fatalf("%s:%d: /healthz %d %s", b.file, b.line, status, body)
					}
				})
			}
		}
	}
	if n < 2 {
		t.Fatalf("%d serve lines marked for this test, want at least 2", n)
	}
}
