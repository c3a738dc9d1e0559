package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// readmeBlock returns the fenced block of lang that follows docs/guides/sandbox.md's
// comment starting with marker.
func readmeBlock(t *testing.T, marker, lang string) string {
	t.Helper()
	data, err := os.ReadFile("../docs/guides/sandbox.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n<!-- "+marker)
	if !ok {
		t.Fatalf("docs/guides/sandbox.md has no %q block", marker)
	}
	_, rest, ok = strings.Cut(rest, "```"+lang+"\n")
	block, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed {
		t.Fatalf("docs/guides/sandbox.md's %q block is not a fenced %s block", marker, lang)
	}
	return block
}

// TestReadmeExample: the sandbox guide's tool in Go builds with the
// command it gives, and with the guide's NAME.json answers as it says.
func TestReadmeExample(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module shout\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(readmeBlock(t, "sandbox example", "go")), 0o644); err != nil {
		t.Fatal(err)
	}
	set := openSet(t, nil, nil)
	build := exec.Command("go", "build", "-o", filepath.Join(set.dir, "shout.wasm"), ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=wasip1 GOARCH=wasm go build: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(set.dir, "shout.json"), readmeBlock(t, "sandbox spec", "json"))
	set.Scan()
	if spec := toolgate.SpecOf(set.tool(t, "shout")); spec.TimeoutMS != 5000 || !spec.ReadOnly {
		t.Fatalf("the guide's shout.json gives %+v", spec)
	}
	out, err := set.call(t, "shout", `{"text": "hi"}`, 10*time.Second)
	if err != nil || string(out) != `{"shouted":"HI"}` {
		t.Fatalf("the guide's tool answered %s, %v", out, err)
	}
	_, err = set.call(t, "shout", `[1]`, 10*time.Second)
	if te := toolError(t, err, "TOOL_ERROR"); !strings.Contains(te.Message, "exited with status 1: bad arguments") {
		t.Fatalf("the guide's tool with bad arguments: %q", te.Message)
	}
}
