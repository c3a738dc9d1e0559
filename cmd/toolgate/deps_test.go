package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryHasNoTestCode: the toolgate binary imports no test helper
// (internal/testwait, internal/gatewaytest) and not the testing package
// they pull in.
func TestBinaryHasNoTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages, too few to be the binary's: %q", len(deps), deps)
	}
	for _, dep := range deps {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") || strings.HasSuffix(dep, "/internal/testwait") || strings.HasSuffix(dep, "/internal/gatewaytest") {
			t.Errorf("the binary imports %s", dep)
		}
	}
}
