package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeRunBlock returns the agents guide's run walkthrough: the sh block after
// the "<!-- run walkthrough" marker.
func readmeRunBlock(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "guides", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(data), "\n<!-- run walkthrough")
	if !found {
		t.Fatal("docs/guides/agents.md has no run walkthrough")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, found := strings.Cut(rest, "\n```")
	if !found {
		t.Fatal("the run walkthrough block is not closed")
	}
	return block
}

// TestReadmeRun runs the agents guide's run example with curl against a gateway
// pointed at the fake model, which calls current_time and then answers.
func TestReadmeRun(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	m := startFakeModel(t, func(req chatRequest) modelTurn {
		if last := lastMessage(req); last.Role == "tool" {
			return modelTurn{Content: "In Tokyo it is " + last.Text()}
		}
		return modelTurn{ToolCalls: []chatToolCall{callTool("t1", "current_time", `{"time_zone":"Asia/Tokyo"}`)}}
	})
	g := modelGateway(t, m, nil)
	dir := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", readmeRunBlock(t))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLGATE="+g.URL, "KEY="+testAgentKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run walkthrough failed: %v\n%s", err, out)
	}
	run, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	for _, want := range []string{`"status":"finished"`, `In Tokyo it is {`, `"tool":"current_time"`} {
		if !strings.Contains(string(run), want) {
			t.Fatalf("run.json lacks %s:\n%s", want, run)
		}
	}
	events, _ := os.ReadFile(filepath.Join(dir, "run-events.txt"))
	var order []string
	for _, line := range strings.Split(string(events), "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			order = append(order, name)
		}
	}
	want := "run_started model_message tool_call_started tool_call_finished model_message run_finished"
	if strings.Join(order, " ") != want {
		t.Fatalf("events = %v, want %s\n%s", order, want, events)
	}
}
