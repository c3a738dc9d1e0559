package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

// readmeBlocks returns the fenced blocks of the agents guide in the language,
// and the one marked as the walkthrough.
func readmeBlocks(t *testing.T, lang string) (blocks []string, walkthrough string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "guides", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	marked := false
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "<!-- walkthrough") {
			marked = true
			continue
		}
		if lines[i] != "```"+lang {
			continue
		}
		var block []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			block = append(block, lines[i])
		}
		text := strings.Join(block, "\n")
		blocks = append(blocks, text)
		if marked {
			walkthrough, marked = text, false
		}
	}
	return blocks, walkthrough
}

// TestReadme runs the agents guide's curl walkthrough against a real gateway,
// then each of its SQL queries against the gateway's database while it
// runs, through the driver and through the sqlite3 shell when installed.
func TestReadme(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	g := startGateway(t, nil)
	_, walkthrough := readmeBlocks(t, "sh")
	if walkthrough == "" {
		t.Fatal("docs/guides/agents.md has no walkthrough block")
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", walkthrough)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLGATE="+g.URL, "KEY="+testAgentKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("walkthrough failed: %v\n%s", err, out)
	}
	answer, err := os.ReadFile(filepath.Join(dir, "answer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(answer), `"status":"completed"`) || !strings.Contains(string(answer), `"output":{"greeting":"Hello, Ada"}`) {
		t.Fatalf("caller's answer = %s\nwalkthrough output:\n%s", answer, out)
	}

	queries, _ := readmeBlocks(t, "sql")
	if len(queries) < 3 {
		t.Fatalf("docs/guides/agents.md has %d SQL queries, want at least 3", len(queries))
	}
	db := sqlx.MustOpen("sqlite", g.DBPath)
	defer db.Close()
	shell, _ := exec.LookPath("sqlite3")
	for i, q := range queries {
		rows, err := db.Queryx(q)
		if err != nil {
			t.Fatalf("query %d: %v\n%s", i+1, err, q)
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if n == 0 {
			t.Errorf("query %d returned no rows after the walkthrough:\n%s", i+1, q)
		}
		if shell != "" {
			out, err := exec.Command(shell, g.DBPath, q).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) == "" {
				t.Errorf("sqlite3 shell, query %d: %v\n%s", i+1, err, out)
			}
		}
	}
}
