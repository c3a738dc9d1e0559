package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// Settings of the runs' chaos test.
const (
	maxRunKills = 10 // at most this many kills, whatever TOOLGATE_CHAOS_KILLS says: CI time stays modest
	runStarters = 3  // goroutines starting runs one after another
	// mcpToolDelay is how long the imported tool takes, so that kills
	// find its calls in flight.
	mcpToolDelay = 300 * time.Millisecond
)

// TestChaosRuns kills the real gateway with SIGKILL while agent runs are
// going on, each step of which calls a sandboxed tool (a WebAssembly
// module run inside the gateway) and an imported MCP server's tool (over
// Streamable HTTP, 300 ms a call) at once, then restarts it a last time
// and checks, from the database file: every run ends (finished or
// failed, none left running), every call of a run ends, and no step of a
// run dispatched a tool call twice (one stored call per tool call the
// model asked for), and no tool call was answered TOOL_NOT_FOUND (a
// resumed run's call made before the import listed its tools again
// waits for the listing), however often the gateway died in the middle.
func TestChaosRuns(t *testing.T) {
	kills, err := strconv.Atoi(os.Getenv(killsEnv))
	if os.Getenv(killsEnv) == "" {
		t.Skipf("the chaos test runs with %s=<kills> (make chaos)", killsEnv)
	}
	if err != nil || kills < 1 {
		t.Fatalf("%s=%q: want a positive number of kills", killsEnv, os.Getenv(killsEnv))
	}
	kills = min(kills, maxRunKills)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
	}
	t.Logf("chaos runs: %d kills, seed %d (replay with %s=%d)", kills, seed, seedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0x72756e73))

	sandboxDir := t.TempDir()
	sandboxtest.Install(t, sandboxDir, "echo", "shout", `{"description": "Upper-case a text", "parameters": {"type": "object"}}`)
	mcpURL, mcpCalls := startSlowMCPServer(t)
	model := startScriptedModel(t)
	g := gatewaytest.Start(t, "--log-level", "warn",
		"--llm-base-url", model, "--llm-model", "scripted",
		"--sandbox-dir", sandboxDir, "--sandbox-cache-dir", sandboxtest.CacheDir(),
		"--mcp-server", "slowmcp="+mcpURL,
		"--default-timeout", "5s") // an imported tool's call open at a kill is not run again: it times out

	var started atomic.Int64 // runs acknowledged
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range runStarters {
		wg.Go(func() {
			client := &http.Client{Timeout: 5 * time.Second}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"input": "run %d-%d", "max_steps": 4, "wait": false}`, i, n)
				req, _ := http.NewRequest("POST", g.URL+"/v1/runs", bytes.NewReader([]byte(body)))
				req.Header.Set("Authorization", "Bearer "+g.AgentKey)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					time.Sleep(100 * time.Millisecond) // the gateway is down: try again
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					started.Add(1)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
	for range kills {
		time.Sleep(minUptime + time.Duration(rng.Int64N(int64(maxUptime-minUptime))))
		g.Kill()
		time.Sleep(time.Duration(rng.Int64N(int64(maxDowntime))))
		g.Restart(t)
	}
	close(stop)
	wg.Wait()

	// Every run ends, within the settle deadline.
	deadline := time.Now().Add(settleDeadline)
	var runs []storedRun
	for {
		runs = readStoredRuns(t, g.DBPath)
		running := 0
		for _, r := range runs {
			if r.Status == "running" {
				running++
			}
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs still running %s after the last restart", running, len(runs), settleDeadline)
		}
		time.Sleep(200 * time.Millisecond)
	}
	g.Kill() // the database file is the last word
	runs = readStoredRuns(t, g.DBPath)
	calls := readRunCalls(t, g.DBPath)
	finished, failed := 0, 0
	for _, r := range runs {
		switch r.Status {
		case "finished":
			finished++
		case "failed":
			failed++
		default:
			t.Errorf("run %s ended %q", r.ID, r.Status)
		}
	}
	perStep := map[string]int{} // calls per run and tool: the model asks for each tool once a run
	byStatus := map[string]int{}
	for _, c := range calls {
		byStatus[c.Status]++
		switch c.Status {
		case "completed", "failed", "timed_out", "cancelled":
		default:
			t.Errorf("call %s (%s) of run %s left %q", c.ID, c.Tool, c.RunID, c.Status)
		}
		perStep[c.RunID+" "+c.Tool]++
	}
	for step, n := range perStep {
		if n > 1 {
			t.Errorf("%d calls stored for one tool call of a run (run and tool: %s)", n, step)
		}
	}
	// Every tool call the model asked for has its answer in the run's
	// messages, stored call or not (a call refused before it was stored,
	// such as an imported tool's while its server is offline, is answered
	// with the refusal). None is refused as an unknown tool: a call made
	// before the imported server listed its tools again waits for the
	// listing (or is TOOL_OFFLINE).
	toolAnswers, offline, notFound := map[string]int{}, 0, 0
	for _, m := range readRunMessages(t, g.DBPath) {
		var msg struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		}
		if json.Unmarshal([]byte(m.Message), &msg) == nil && msg.Role == "tool" {
			toolAnswers[m.RunID]++
			text, _ := json.Marshal(msg.Content)
			if bytes.Contains(text, []byte("TOOL_OFFLINE")) {
				offline++
			} else if bytes.Contains(text, []byte("TOOL_NOT_FOUND")) {
				notFound++
				t.Errorf("a tool call of run %s was answered TOOL_NOT_FOUND: %s", m.RunID, text)
			}
		}
	}
	for _, r := range runs {
		if r.Status == "finished" && toolAnswers[r.ID] != 2 {
			t.Errorf("run %s finished with %d tool answers; the model asked for 2", r.ID, toolAnswers[r.ID])
		}
	}
	if int64(len(runs)) < started.Load() {
		t.Errorf("%d runs stored, fewer than the %d acknowledged", len(runs), started.Load())
	}
	if finished == 0 {
		t.Error("no run finished")
	}
	t.Logf("chaos runs: %d kills, %d runs (%d acknowledged): %d finished, %d failed; %d calls %v; %d tool calls answered TOOL_OFFLINE and %d TOOL_NOT_FOUND (not stored); the MCP server ran %d calls",
		kills, len(runs), started.Load(), finished, failed, len(calls), byStatus, offline, notFound, mcpCalls.Load())
}

// storedRun is a run as the database file holds it.
type storedRun struct {
	ID     string `db:"id"`
	Status string `db:"status"`
}

// storedRunCall is a call of a run as the database file holds it.
type storedRunCall struct {
	ID     string `db:"id"`
	RunID  string `db:"run_id"`
	Tool   string `db:"tool"`
	Status string `db:"status"`
}

func readStoredRuns(t *testing.T, dbPath string) []storedRun {
	t.Helper()
	var rows []storedRun
	withDB(t, dbPath, func(db *sqlx.DB) error { return db.Select(&rows, `SELECT id, status FROM runs`) })
	return rows
}

func readRunCalls(t *testing.T, dbPath string) []storedRunCall {
	t.Helper()
	var rows []storedRunCall
	withDB(t, dbPath, func(db *sqlx.DB) error {
		return db.Select(&rows, `SELECT id, run_id, tool, status FROM calls WHERE run_id IS NOT NULL`)
	})
	return rows
}

// storedRunMessage is one message of a run as the database file holds it.
type storedRunMessage struct {
	RunID   string `db:"run_id"`
	Message string `db:"message"`
}

func readRunMessages(t *testing.T, dbPath string) []storedRunMessage {
	t.Helper()
	var rows []storedRunMessage
	withDB(t, dbPath, func(db *sqlx.DB) error { return db.Select(&rows, `SELECT run_id, message FROM run_messages`) })
	return rows
}

// withDB opens the database file read-only for fn.
func withDB(t *testing.T, dbPath string, fn func(*sqlx.DB) error) {
	t.Helper()
	db, err := sqlx.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := fn(db); err != nil {
		t.Fatalf("reading %s: %v", dbPath, err)
	}
}

// startSlowMCPServer serves an MCP server (Go SDK, Streamable HTTP) whose
// tool "slow" answers "ok" after mcpToolDelay; it returns its URL and
// the count of calls it ran.
func startSlowMCPServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "chaos-mcp", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Answers ok after a while.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			select {
			case <-time.After(mcpToolDelay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp", &calls
}

// startScriptedModel serves an OpenAI-compatible chat-completions
// endpoint: a run's first turn asks for the sandboxed tool and the
// imported one at once; once the last message is a tool's answer, it
// answers "done". It returns its base URL.
func startScriptedModel(t *testing.T) string {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, 400)
			return
		}
		id := n.Add(1)
		msg := map[string]any{"role": "assistant", "content": "done"}
		finish := "stop"
		if req.Messages[len(req.Messages)-1].Role != "tool" {
			call := func(suffix, name, args string) map[string]any {
				return map[string]any{"id": fmt.Sprintf("call_%d_%s", id, suffix), "type": "function",
					"function": map[string]any{"name": name, "arguments": args}}
			}
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				call("shout", "shout", `{"text": "hi"}`), call("slow", "slowmcp__slow", `{}`)}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", id), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}
