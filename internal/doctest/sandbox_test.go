package doctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGuideSandbox follows docs/guides/sandbox.md: the Go tool saved as
// shout/main.go and built with the guide's block, the guide's shout.json
// beside it, a gateway serving the folder (as the guide's serve line
// does), and the guide's curl calling the tool.
func TestGuideSandbox(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	const guide = "docs/guides/sandbox.md"
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "shout"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "shout", "main.go"), []byte(markedBlock(t, guide, "sandbox example", "go")), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(withoutToolgateEnv(os.Environ()), "GOWORK=off")
	runBlock(t, work, markedBlock(t, guide, "TestGuideSandbox runs this block", "sh"), env)
	if err := os.WriteFile(filepath.Join(work, "tools", "shout.json"), []byte(markedBlock(t, guide, "sandbox spec", "json")), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := markedBlock(t, guide, "TestGuideSandbox starts the gateway", "sh")
	if strings.TrimSpace(serve) != "bin/toolgate serve --sandbox-dir tools" {
		t.Fatalf("the guide's serve line changed; start the gateway here as it says:\n%s", serve)
	}
	g := startGateway(t, "", "--sandbox-dir", filepath.Join(work, "tools"))
	call := markedBlock(t, guide, "TestGuideSandbox runs this call", "sh")
	if !strings.Contains(call, defaultURL) {
		t.Fatalf("the guide's call does not name %s, the address the test replaces:\n%s", defaultURL, call)
	}
	var out string
	deadline := time.Now().Add(time.Minute)
	for {
		out = runBlock(t, work, strings.ReplaceAll(call, defaultURL, g.url), append(env, "AGENT_KEY="+g.key))
		if !strings.Contains(out, "TOOL_NOT_FOUND") || time.Now().After(deadline) {
			break // the module is compiled when it is listed: a call made before is TOOL_NOT_FOUND
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustContain(t, "the guide's call of shout", out, `"status":"completed"`, `"output":{"shouted":"HI"}`)
}
