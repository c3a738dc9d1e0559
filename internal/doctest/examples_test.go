package doctest

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// goAppTimeout bounds how long a Go example may take to build (go mod tidy
// through the module proxy, a first compile of the SDK) and register its tool.
const goAppTimeout = 4 * time.Minute

// runGoApp builds and runs a Go example the way its doc says: the program
// saved as battery/main.go beside a checkout of toolgate in ./toolgate (a
// link to this one), then the doc's shell block, which makes the module,
// points it at the checkout and runs it. The program is pointed at g (it
// names make run's address), and must register battery_level there; then
// go vet and go build check it in the module the block made.
func runGoApp(t *testing.T, g *gateway, program, setup string) {
	t.Helper()
	if !strings.Contains(program, defaultURL) {
		t.Fatalf("the program does not name %s, the address the test replaces:\n%s", defaultURL, program)
	}
	work := t.TempDir()
	if err := os.Symlink(moduleRoot(t), filepath.Join(work, "toolgate")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(work, "battery")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "main.go"), []byte(strings.ReplaceAll(program, defaultURL, g.url)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(withoutToolgateEnv(os.Environ()), "GOWORK=off")
	bg := startBlock(t, work, setup, env)
	g.waitForTool(t, "battery_level", goAppTimeout, bg.alive)
	for _, args := range [][]string{{"vet", "."}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = app, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the module the block made: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// mustContain fails the test when out lacks any of wants.
func mustContain(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %s:\n%s", what, w, out)
		}
	}
}

// TestReadmeExamples runs README.md's examples in the order a newcomer
// does: a gateway started as make run starts it (the key generated and kept
// in its key file), the Go program built and run with the README's commands
// in a module of its own, then the agent's lines — the key taken from the
// key file, the tools listed, a built-in tool and the program's tool called.
func TestReadmeExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	g := startGateway(t, "")
	runGoApp(t, g,
		markedBlock(t, "README.md", "builds this program", "go"),
		markedBlock(t, "README.md", "to build and run the program above", "sh"))
	export := markedBlock(t, "README.md", "runs this line in the directory of a gateway", "sh")
	if !strings.Contains(export, "toolgate.db.agent-key") {
		t.Fatalf("the README's key line does not read the key file:\n%s", export)
	}
	agent := markedBlock(t, "README.md", "with the program above connected", "sh")
	env := append(withoutToolgateEnv(os.Environ()), "TOOLGATE="+g.url)
	out := runBlock(t, g.dir, export+"\n"+agent, env)
	mustContain(t, "the README's agent block's output", out,
		`"name":"battery_level"`, `"name":"current_time"`, `"tool":"current_time"`,
		`"tool":"battery_level"`, `"output":{"percent":87}`)
	if strings.Count(out, `"status":"completed"`) != 2 {
		t.Errorf("want both calls completed:\n%s", out)
	}
}

// TestReadmePageSnippet: README.md's page block is one module script that
// node parses, importing from the gateway's /toolgate.js what that module
// exports. (web/e2e/browser/cross-origin.test.mjs runs it in Chromium.)
func TestReadmePageSnippet(t *testing.T) {
	html := markedBlock(t, "README.md", "web/e2e/browser/cross-origin.test.mjs", "html")
	script, ok := strings.CutPrefix(strings.TrimSpace(html), `<script type="module">`)
	script, closed := strings.CutSuffix(script, "</script>")
	if !ok || !closed {
		t.Fatalf("the README's page block is not one <script type=\"module\">:\n%s", html)
	}
	if !strings.Contains(script, `import { ToolgateClient } from "`+defaultURL+`/toolgate.js"`) {
		t.Fatalf("the README's page block does not import ToolgateClient from %s/toolgate.js:\n%s", defaultURL, script)
	}
	g := startGateway(t, "")
	resp, err := http.Get(g.url + "/toolgate.js")
	if err != nil {
		t.Fatal(err)
	}
	sdk, _ := readAllClose(resp)
	if resp.StatusCode != 200 || !strings.Contains(sdk, "export class ToolgateClient") {
		t.Fatalf("GET /toolgate.js: %d, does not export ToolgateClient", resp.StatusCode)
	}
	for _, method := range []string{"registerTool(", "connect(", "on("} {
		if !strings.Contains(sdk, "\n  "+method) && !strings.Contains(sdk, " "+method) {
			t.Errorf("the served SDK has no %s", method)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the syntax check needs it")
	}
	file := filepath.Join(t.TempDir(), "page.mjs")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(node, "--check", file).CombinedOutput(); err != nil {
		t.Fatalf("node --check of the README's page script: %v\n%s", err, out)
	}
}

// TestGuideGoApp builds and runs the Go program of docs/guides/apps.md with
// the guide's commands, against a gateway.
func TestGuideGoApp(t *testing.T) {
	g := startGateway(t, "")
	runGoApp(t, g,
		markedBlock(t, "docs/guides/apps.md", "builds this program", "go"),
		markedBlock(t, "docs/guides/apps.md", "to build and run the program below", "sh"))
	status, body := g.api(t, "POST", "/v1/calls", `{"session_id": "`+g.waitForTool(t, "battery_level", time.Second, func() error { return nil })+`", "tool": "battery_level", "args": {}}`)
	if status != 200 || !strings.Contains(string(body), `"output":{"percent":87}`) {
		t.Fatalf("calling the guide's program's tool: %d %s", status, body)
	}
}

// TestGuideConnect runs docs/guides/apps.md's toolgate connect blocks: the
// tool folder made and bin/toolgate connect started on it (bin/toolgate is
// what make build writes), then the agent's call of its tool.
func TestGuideConnect(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	g := startGateway(t, "")
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gatewaytest.Binary(t), filepath.Join(work, "bin", "toolgate")); err != nil {
		t.Fatal(err)
	}
	env := withoutToolgateEnv(os.Environ())
	connect := markedBlock(t, "docs/guides/apps.md", "bin/toolgate connect against a gateway", "sh")
	bg := startBlock(t, work, strings.ReplaceAll(connect, defaultURL, g.url), env)
	g.waitForTool(t, "disk_free", time.Minute, bg.alive)
	call := markedBlock(t, "docs/guides/apps.md", "runs the block above and this one", "sh")
	out := runBlock(t, work, strings.ReplaceAll(call, defaultURL, g.url), append(env, "AGENT_KEY="+g.key))
	mustContain(t, "the guide's call of disk_free", out, `"status":"completed"`, `"free_kib":`)
}

// TestGuideMCPConfigs: the MCP host configurations of docs/guides/agents.md
// that name the gateway's URL and headers are JSON, and an MCP initialize
// sent with that URL and those headers (the agent key put where the guide
// says) is answered by a gateway.
func TestGuideMCPConfigs(t *testing.T) {
	g := startGateway(t, "")
	n := 0
	for _, b := range parseBlocks("docs/guides/agents.md", readDoc(t, "docs/guides/agents.md")) {
		if b.lang != "json" || !strings.Contains(b.marker, "TestGuideMCPConfigs") {
			continue
		}
		n++
		var config struct {
			MCPServers map[string]mcpServerConfig `json:"mcpServers"`
			Servers    map[string]mcpServerConfig `json:"servers"`
		}
		if err := json.Unmarshal([]byte(b.text), &config); err != nil {
			t.Fatalf("agents.md:%d: not JSON: %v", b.line, err)
		}
		server, ok := config.MCPServers["toolgate"]
		if !ok {
			server, ok = config.Servers["toolgate"]
		}
		if !ok || server.Command != "" {
			// The Claude Desktop entry starts mcp-remote: its URL must still be the gateway's.
			if !ok || !strings.Contains(strings.Join(server.Args, " "), defaultURL+"/mcp") {
				t.Fatalf("agents.md:%d: no toolgate server naming %s/mcp:\n%s", b.line, defaultURL, b.text)
			}
			continue
		}
		if server.URL != defaultURL+"/mcp" {
			t.Fatalf("agents.md:%d: url %q, want %s/mcp", b.line, server.URL, defaultURL)
		}
		req, err := http.NewRequest("POST", strings.Replace(server.URL, defaultURL, g.url, 1), strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doctest","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range server.Headers {
			v = strings.ReplaceAll(v, "tga_your_agent_key", g.key)
			v = strings.ReplaceAll(v, "${input:toolgate-key}", g.key)
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := readAllClose(resp)
		if resp.StatusCode != 200 || !strings.Contains(body, `"serverInfo"`) {
			t.Errorf("agents.md:%d: initialize with the configured headers: %d %s", b.line, resp.StatusCode, body)
		}
	}
	if n < 2 {
		t.Fatalf("agents.md has %d MCP configurations marked for this test, want the Cursor and VS Code ones at least", n)
	}
}

// mcpServerConfig is one server of an MCP host's configuration file.
type mcpServerConfig struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
}
