package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/cputime"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
	"github.com/toolgate/toolgate/server"
)

// benchHTTP is the clients' HTTP client: keep-alive connections for as
// many clients as a benchmark runs (the default keeps two per host).
var benchHTTP = &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}}

// answeringClient is a client over the real stream: it reads each
// tool_call_request and posts a tool_result, until the stream ends.
func answeringClient(tb testing.TB, g *gateway, s session) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", g.URL+"/v1/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := benchHTTP.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		resultsURL := g.URL + "/v1/sessions/" + s.ID + "/results"
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "event: ready") {
				close(ready)
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || !strings.Contains(data, `"tool_call_request"`) {
				continue
			}
			var ev struct {
				ID   string          `json:"id"`
				Args json.RawMessage `json:"args"`
			}
			json.Unmarshal([]byte(data), &ev)
			body, _ := json.Marshal(map[string]any{"type": "tool_result", "id": ev.ID, "success": true, "output": ev.Args})
			post, _ := http.NewRequest("POST", resultsURL, bytes.NewReader(body))
			post.Header.Set("Authorization", "Bearer "+s.Token)
			post.Header.Set("Content-Type", "application/json")
			r, err := benchHTTP.Do(post)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		tb.Fatal("stream not ready")
	}
	return func() { cancel(); <-done }
}

// BenchmarkRoundTrip measures one full call, one at a time, over real HTTP
// with persistence on: the call is stored, the event goes out on the SSE
// stream, the client posts its answer, the answer is stored and the caller
// is woken. "engine" is an in-process caller (the agent loop's path);
// "http" is a caller using POST /v1/calls with wait.
func BenchmarkRoundTrip(b *testing.B) {
	for _, via := range []string{"engine", "http"} {
		b.Run(via, func(b *testing.B) {
			g := startGateway(b, nil)
			s := g.newSession("bench")
			g.register(s, echoTool)
			stop := answeringClient(b, g, s)
			defer stop()
			eng := g.Server.Engine
			args := json.RawMessage(`{"text":"ping"}`)
			httpBody, _ := json.Marshal(map[string]any{"session_id": s.ID, "tool": "echo", "args": args})
			ctx := context.Background()
			tx0 := g.Server.Store.Transactions()
			cpu0 := cputime.Process()
			for b.Loop() {
				var status toolgate.CallStatus
				if via == "engine" {
					call, err := eng.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: s.ID, Tool: "echo", Args: args}, "")
					if err != nil {
						b.Fatal(err)
					}
					final, err := eng.Calls.WaitCall(ctx, call.ID, -1)
					if err != nil {
						b.Fatal(err)
					}
					status = final.Status
				} else {
					req, _ := http.NewRequest("POST", g.URL+"/v1/calls", bytes.NewReader(httpBody))
					req.Header.Set("Authorization", "Bearer "+testAgentKey)
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					var rec callRecord
					json.NewDecoder(resp.Body).Decode(&rec)
					resp.Body.Close()
					status = toolgate.CallStatus(rec.Status)
				}
				if status != toolgate.StatusCompleted {
					b.Fatalf("status %s", status)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(g.Server.Store.Transactions()-tx0)/float64(b.N), "db-tx/call")
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

// BenchmarkThroughput measures calls per second with many clients, each
// with its own caller, all at once: in-process callers, real SSE streams,
// answers posted over real HTTP, persistence on. The reported calls/s is
// the figure to compare; ns/op is its inverse.
func BenchmarkThroughput(b *testing.B) {
	for _, clients := range []int{64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			g := startGateway(b, nil)
			sessions := make([]session, clients)
			for i := range sessions {
				sessions[i] = g.newSession("bench")
				g.register(sessions[i], echoTool)
				stop := answeringClient(b, g, sessions[i])
				defer stop()
			}
			tx0 := g.Server.Store.Transactions()
			ids := make([]string, len(sessions))
			for i, s := range sessions {
				ids[i] = s.ID
			}
			b.ResetTimer()
			cpu0 := cputime.Process()
			elapsed := callConcurrently(b, g.Server.Engine, ids)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(float64(g.Server.Store.Transactions()-tx0)/float64(b.N), "db-tx/call")
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

// sdkEcho is the echo tool's handler in the Go SDK.
type sdkEcho struct{}

func (sdkEcho) Handle(callID, toolName, argsJSON string) (string, error) { return argsJSON, nil }

// sdkQuiet drops the SDK's log lines.
type sdkQuiet struct{}

func (sdkQuiet) Log(level, message string) {}

// BenchmarkThroughputSDK is BenchmarkThroughput with the real Go SDK
// (package mobile, over SSE, one worker each) as the clients, in this
// process: its profile shows the SDK's share next to the gateway's.
func BenchmarkThroughputSDK(b *testing.B) {
	const clients = 64
	g := startGateway(b, nil)
	ids := make([]string, clients)
	for i := range ids {
		c := mobile.NewClient(g.URL)
		c.SetLogger(sdkQuiet{})
		c.SetTransport(mobile.TransportSSE)
		if err := c.RegisterTool("echo", "Answers with its arguments", `{"type":"object"}`); err != nil {
			b.Fatal(err)
		}
		c.SetHandler(sdkEcho{})
		if err := c.Connect(); err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		testwait.Until(b, 10*time.Second, "the SDK client connected", func() bool { return c.State() == mobile.StateConnected })
		ids[i] = c.SessionID()
	}
	b.ResetTimer()
	cpu0 := cputime.Process()
	elapsed := callConcurrently(b, g.Server.Engine, ids)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
}

// callConcurrently makes b.N calls of the echo tool, with one in-process
// caller per session calling its own session's client, and returns how
// long they took.
func callConcurrently(b *testing.B, eng *server.Engine, sessionIDs []string) time.Duration {
	args := json.RawMessage(`{"text":"ping"}`)
	next := make(chan struct{}, len(sessionIDs))
	start := time.Now()
	go func() {
		for range b.N {
			next <- struct{}{}
		}
		close(next)
	}()
	var wg sync.WaitGroup
	for _, sid := range sessionIDs {
		wg.Go(func() {
			ctx := context.Background()
			for range next {
				call, err := eng.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "echo", Args: args}, "")
				if err != nil {
					b.Error(err)
					return
				}
				if final, err := eng.Calls.WaitCall(ctx, call.ID, -1); err != nil || final.Status != toolgate.StatusCompleted {
					b.Errorf("call: %v %v", final, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
