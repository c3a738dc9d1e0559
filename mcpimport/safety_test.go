//go:build unix

//lint:file-ignore SA1019 a test server asks for roots and sampling, deprecated at 2026-07-28, to show what a server that still asks gets

package mcpimport_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testlog"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpimport"
)

// oldServerEnv, set to ignore, exit or refuse, makes the test binary a
// stdio server of an SDK older than server/discover (init, before
// TestMain): it ignores that request, exits on it, or answers it with
// "method not found"; the first other request (initialize) and the rest
// go to the Go SDK's server. Each start and each request's method is a
// line of the file oldServerLogEnv names.
const (
	oldServerEnv    = "MCPIMPORT_TEST_OLD_SERVER"
	oldServerLogEnv = "MCPIMPORT_TEST_OLD_SERVER_LOG"
)

func init() {
	if mode := os.Getenv(oldServerEnv); mode != "" {
		os.Exit(runOldServer(mode, os.Getenv(oldServerLogEnv)))
	}
}

func runOldServer(mode, logPath string) int {
	note := func(line string) {
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	note("start")
	in := bufio.NewReader(os.Stdin)
	switch mode {
	case "untyped-schemas":
		return runUntypedSchemaServer(in)
	case "modern":
		srv := newTestMCPServer(nil, newServerEvents())
		addAskTool(srv)
		if err := srv.Run(context.Background(), &mcp.IOTransport{Reader: io.NopCloser(in), Writer: os.Stdout}); err != nil {
			fmt.Fprintln(os.Stderr, "modern test server:", err)
		}
		return 0
	}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(line, &req)
		note(req.Method)
		if req.Method != "server/discover" {
			srv := newTestMCPServer(nil, newServerEvents())
			addAskTool(srv)
			rest := io.NopCloser(io.MultiReader(bytes.NewReader(line), in))
			if err := srv.Run(context.Background(), &mcp.IOTransport{Reader: rest, Writer: os.Stdout}); err != nil {
				fmt.Fprintln(os.Stderr, "old test server:", err)
			}
			return 0
		}
		switch mode {
		case "exit":
			return 0
		case "refuse":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", req.ID)
		}
	}
}

// startOldServer imports the test binary as an old server of mode, and
// returns it with the file of the methods it was sent.
func startOldServer(t *testing.T, mode string, log *testlog.LockedBuffer) (*mcpimport.Server, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	methods := filepath.Join(t.TempDir(), "methods")
	target := oldServerEnv + "=" + mode + " " + oldServerLogEnv + "=" + shellQuote(methods) + " exec " + shellQuote(exe) + " -test.run=^$"
	opts := fastOptions(log.Logger(slog.LevelDebug))
	opts.DiscoverTimeout = time.Second
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(log.String())
		}
	})
	return startImport(t, mcpimport.Config{Name: "old", Target: target}, opts), methods
}

// methodsSent is what the old server's processes were sent, a start
// being "start".
func methodsSent(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(raw))
}

// TestStdioServerIgnoringDiscover: a server that never answers
// server/discover comes online: the probe is answered with an error after
// DiscoverTimeout and the handshake goes on with initialize on the same
// process; once started again, it is sent initialize alone.
func TestStdioServerIgnoringDiscover(t *testing.T) {
	var log testlog.LockedBuffer
	s, methods := startOldServer(t, "ignore", &log)
	wantOutput(t, s, "old__echo", `{"text":"hi"}`, `"echo: hi"`)
	if got := methodsSent(t, methods); !slices.Equal(got[:3], []string{"start", "server/discover", "initialize"}) {
		t.Fatalf("methods sent %v, want start, server/discover, initialize, ...", got)
	}
	if !strings.Contains(log.String(), "MCP server did not answer server/discover") {
		t.Error("the log does not say the probe went unanswered")
	}
	if err := syscall.Kill(serverPID(t, s), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "old offline", func() bool { return !s.Online() })
	testwait.Until(t, 10*time.Second, "old online again", s.Online)
	got := methodsSent(t, methods)
	again := got[slices.Index(got[1:], "start")+1:]
	if len(again) < 2 || again[1] != "initialize" || slices.Contains(again, "server/discover") {
		t.Fatalf("after a restart the server was sent %v, want initialize and no server/discover", again)
	}
}

// TestStdioServerExitingOnDiscover: a server that exits on server/discover
// is started again at once and spoken to with initialize alone, and comes
// online.
func TestStdioServerExitingOnDiscover(t *testing.T) {
	var log testlog.LockedBuffer
	s, methods := startOldServer(t, "exit", &log)
	wantOutput(t, s, "old__echo", `{"text":"hi"}`, `"echo: hi"`)
	if got := methodsSent(t, methods); !slices.Equal(got[:4], []string{"start", "server/discover", "start", "initialize"}) {
		t.Fatalf("methods sent %v, want start, server/discover, start, initialize, ...", got)
	}
	if !strings.Contains(log.String(), "MCP server exited on server/discover") {
		t.Error("the log does not say the server exited on the probe")
	}
	if strings.Contains(log.String(), "MCP server unreachable") {
		t.Error("the exit on the probe was taken for a failed connection")
	}
}

// TestStdioServerRefusingDiscover: a server that answers server/discover
// with an error is spoken to with initialize on the same process.
func TestStdioServerRefusingDiscover(t *testing.T) {
	var log testlog.LockedBuffer
	s, methods := startOldServer(t, "refuse", &log)
	wantOutput(t, s, "old__echo", `{"text":"hi"}`, `"echo: hi"`)
	if got := methodsSent(t, methods); !slices.Equal(got[:3], []string{"start", "server/discover", "initialize"}) {
		t.Fatalf("methods sent %v, want start, server/discover, initialize, ...", got)
	}
}

// TestStdioEnvironment: a command gets the variables of BaseEnv and those
// its Config names, and nothing else of the gateway's environment: not
// its keys (TOOLGATE_*), not a variable left unnamed.
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("TOOLGATE_AGENT_KEY", "agent-key-of-the-gateway")
	t.Setenv("MCPIMPORT_GRANTED", "granted value")
	t.Setenv("MCPIMPORT_NOT_GRANTED", "kept back")
	t.Setenv("HOME", "/home/tester")
	envFile := filepath.Join(t.TempDir(), "env")
	var log testlog.LockedBuffer
	cfg := mcpimport.Config{Name: "local", Target: stdioServerCommand(t, "env > "+shellQuote(envFile)+"; "), Env: []string{"MCPIMPORT_GRANTED"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := startImport(t, cfg, fastOptions(log.Logger(slog.LevelDebug)))
	wantOutput(t, s, "local__echo", `{"text":"hi"}`, `"echo: hi"`)
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := string(raw)
	for _, want := range []string{"MCPIMPORT_GRANTED=granted value\n", "HOME=/home/tester\n", "PATH=" + os.Getenv("PATH") + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("the command's environment lacks %q:\n%s", want, env)
		}
	}
	for _, unwanted := range []string{"TOOLGATE_", "agent-key-of-the-gateway", "MCPIMPORT_NOT_GRANTED", "kept back"} {
		if strings.Contains(env, unwanted) {
			t.Errorf("the command's environment has %q:\n%s", unwanted, env)
		}
	}

	refused := mcpimport.Config{Name: "local", Target: "x", Env: []string{"TOOLGATE_AGENT_KEY"}}
	if err := refused.Validate(); err == nil || !strings.Contains(err.Error(), "never passed") {
		t.Errorf("a Config naming TOOLGATE_AGENT_KEY: %v", err)
	}
}

// runUntypedSchemaServer answers initialize and tools/list by hand, its
// tools' input schemas without a type, as some servers send them.
func runUntypedSchemaServer(in *bufio.Reader) int {
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(line, &req)
		if req.ID == nil {
			continue // a notification
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"untyped","version":"1"}}`
		case "tools/list":
			result = `{"tools":[
				{"name":"only_schema","description":"Only $schema.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#"}},
				{"name":"untyped_properties","description":"Properties, no type.","inputSchema":{"properties":{"path":{"type":"string"}},"required":["path"]}},
				{"name":"a_string","description":"Not an object.","inputSchema":{"type":"string"}}]}`
		case "ping":
			result = `{}`
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", req.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, strings.Join(strings.Fields(result), " "))
	}
}

// TestUntypedInputSchemas: tools whose input schema has no type but
// nothing against an object (only $schema; properties without a type)
// are imported as objects; one of another type is still left out.
func TestUntypedInputSchemas(t *testing.T) {
	var log testlog.LockedBuffer
	s, _ := startOldServer(t, "untyped-schemas", &log)
	if got, want := toolNames(s), []string{"old__only_schema", "old__untyped_properties"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if got := string(toolNamed(t, s, "old__untyped_properties").Parameters()); got != `{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}` {
		t.Errorf("parameters %s", got)
	}
	if !strings.Contains(log.String(), `msg="MCP tool left out" mcp_server=old tool=a_string`) {
		t.Error("the string-typed tool is not said to be left out")
	}
}

// addAskTool gives s the tool ask, which asks the client for its roots,
// a sampling and an elicitation, and answers with what the client
// declared at initialize and what each request got.
func addAskTool(s *mcp.Server) {
	// ask_input asks in the 2026-07-28 way: a result of input requests
	// (an elicitation), the call to be made again with the answers.
	s.AddTool(&mcp.Tool{Name: "ask_input", Description: "Asks for roots, a sampling or an elicitation with an input request.", InputSchema: objectSchema("what")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) > 0 {
				raw, _ := json.Marshal(req.Params.InputResponses)
				return text("answered: " + string(raw)), nil
			}
			var args struct{ What string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			var ir mcp.InputRequest = &mcp.ElicitParams{Message: "Go on?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}
			switch args.What {
			case "roots":
				ir = &mcp.ListRootsParams{}
			case "sampling":
				ir = &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"ask": ir}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask", Description: "Asks the client for roots, sampling and elicitation.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			declared := "nothing (no initialize)"
			if p := req.Session.InitializeParams(); p != nil {
				raw, _ := json.Marshal(p.Capabilities)
				declared = string(raw)
			}
			outcome := func(what string, err error) string {
				if err != nil {
					return what + ": " + err.Error()
				}
				return what + ": answered"
			}
			roots, rootsErr := req.Session.ListRoots(ctx, nil)
			_, samplingErr := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
			_, elicitErr := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Go on?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
			rootsOutcome := outcome("roots", rootsErr)
			if rootsErr == nil {
				rootsOutcome = fmt.Sprintf("roots: %d", len(roots.Roots))
			}
			return text(strings.Join([]string{"declared: " + declared, rootsOutcome,
				outcome("sampling", samplingErr), outcome("elicitation", elicitErr)}, "\n")), nil
		})
}

// TestServerRequestsNotOffered: the gateway offers an imported server no
// roots, sampling or elicitation. At 2025-11-25 its client declares only
// an empty roots capability (the Go SDK always declares roots), without
// listChanged; roots/list gets an empty list, and sampling and
// elicitation are refused at once. At 2026-07-28 a server cannot send
// such requests while serving a call, and a call answered with an input
// request (an elicitation) fails MCP_ERROR at once.
func TestServerRequestsNotOffered(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"refuse", []string{`declared: {"roots":{}}`, "roots: 0",
			`sampling: calling "sampling/createMessage": client does not support CreateMessage`,
			"elicitation: client does not support elicitation"}},
		{"modern", []string{`declared: {"roots":{}}`,
			`roots: "roots/list" cannot be sent while serving a request on protocol version 2026-07-28`,
			`sampling: "sampling/createMessage" cannot be sent while serving a request on protocol version 2026-07-28`,
			`elicitation: "elicitation/create" cannot be sent while serving a request on protocol version 2026-07-28`}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var log testlog.LockedBuffer
			s, _ := startOldServer(t, tc.mode, &log)
			out, err := call(t, s, "old__ask", `{}`)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %s: %v", out, err)
			}
			lines := strings.Split(got, "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("ask answered %q", got)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("ask answered %q, want %q", lines[i], want)
				}
			}
			if tc.mode == "modern" {
				_, err := call(t, s, "old__ask_input", `{"what":"elicitation"}`)
				if te := wantCode(t, err, "MCP_ERROR"); !strings.Contains(te.Message, "client does not support elicitation") {
					t.Errorf("ask_input elicitation: %v", te)
				}
				_, err = call(t, s, "old__ask_input", `{"what":"sampling"}`)
				if te := wantCode(t, err, "MCP_ERROR"); !strings.Contains(te.Message, "does not support") {
					t.Errorf("ask_input sampling: %v", te)
				}
				wantOutput(t, s, "old__ask_input", `{"what":"roots"}`, `"answered: {\"ask\":{\"roots\":[]}}"`)
			}
		})
	}
}
