package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/server"
)

// postForRetry posts body with the secret and returns the status, the
// Retry-After header and the body.
func (g *gateway) postForRetry(path, secret string, body any) (int, string, []byte) {
	g.t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", g.URL+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), reply
}

// count runs a COUNT(*) query on the gateway's database.
func (g *gateway) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := g.db(t).Get(&n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// gatedModel is a fake model whose answer to a run waits until the gate
// named by the run's input is closed; every gate is closed when the test
// ends (before the model's server closes, which waits for its handlers).
func gatedModel(t *testing.T, names ...string) (*fakeModel, map[string]chan struct{}) {
	gates := map[string]chan struct{}{}
	for _, n := range names {
		gates[n] = make(chan struct{})
	}
	m := startFakeModel(t, func(req chatRequest) modelTurn {
		if gate := gates[lastMessage(req).Text()]; gate != nil {
			<-gate
		}
		return modelTurn{Content: "ok"}
	})
	t.Cleanup(func() {
		for _, gate := range gates {
			select {
			case <-gate:
			default:
				close(gate)
			}
		}
	})
	return m, gates
}

// TestRunsInProgressPerSession: a session's token may have
// MaxRunsPerSession runs in progress; the next is 429 RATE_LIMITED with
// Retry-After and is not stored; the agent key's runs on the session are
// not counted; once one ends, the session may start another.
func TestRunsInProgressPerSession(t *testing.T) {
	m, gates := gatedModel(t, "a", "b", "c", "agent")
	g := modelGateway(t, m, func(c *serverConfig) { c.MaxRunsPerSession = 2 })
	s := g.newSession("chat")
	runs := "/v1/sessions/" + s.ID + "/runs"

	first := g.runStream(runs, s.Token, map[string]any{"input": "a"})
	if status, _, body := g.postForRetry(runs, s.Token, map[string]any{"input": "b", "wait": false}); status != 202 {
		t.Fatalf("second run: %d %s", status, body)
	}
	status, retry, body := g.postForRetry(runs, s.Token, map[string]any{"input": "c", "wait": false})
	if status != 429 || errorCode(body) != "RATE_LIMITED" || retry != "5" {
		t.Fatalf("third run: %d, Retry-After %q, %s; want 429 RATE_LIMITED with 5", status, retry, body)
	}
	if status, _, body := g.postForRetry("/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "agent", "wait": false}); status != 202 {
		t.Fatalf("the agent key's run on the session: %d %s", status, body)
	}
	if n := g.count(t, `SELECT COUNT(*) FROM runs`); n != 3 {
		t.Fatalf("runs stored: %d, want 3 (the refused one is not)", n)
	}

	close(gates["a"])
	first.untilRunEvent("run_finished") // its slot is free once its end is told
	if status, _, body := g.postForRetry(runs, s.Token, map[string]any{"input": "c", "wait": false}); status != 202 {
		t.Fatalf("a run after one ended: %d %s", status, body)
	}
}

// TestRunPacePerSession: a session's token may start RunBurst runs at
// once, then one per 1/RunRate seconds: the next is 429 with the seconds
// until it may start one; the agent key is not held to it.
func TestRunPacePerSession(t *testing.T) {
	m := startFakeModel(t, func(chatRequest) modelTurn { return modelTurn{Content: "ok"} })
	g := modelGateway(t, m, func(c *serverConfig) { c.RunRate, c.RunBurst = 0.01, 2 })
	s := g.newSession("chat")
	runs := "/v1/sessions/" + s.ID + "/runs"
	for i := range 2 {
		if status, _, body := g.postForRetry(runs, s.Token, map[string]any{"input": "hi"}); status != 200 {
			t.Fatalf("run %d: %d %s", i+1, status, body)
		}
	}
	status, retry, body := g.postForRetry(runs, s.Token, map[string]any{"input": "hi"})
	if status != 429 || errorCode(body) != "RATE_LIMITED" || retry != "100" {
		t.Fatalf("run over the pace: %d, Retry-After %q, %s; want 429 with 100", status, retry, body)
	}
	for i := range 3 {
		if status, _, body := g.postForRetry("/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "hi"}); status != 200 {
			t.Fatalf("agent key run %d: %d %s", i+1, status, body)
		}
	}
}

// TestOpenCallsPerSession: a session may be the target of
// MaxOpenCallsPerSession calls not yet final; the next is 429
// RATE_LIMITED with Retry-After and nothing is stored; each way a call
// ends (answer, cancel) frees its place; other sessions are not touched.
func TestOpenCallsPerSession(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MaxOpenCallsPerSession = 2 })
	s, other := g.newSession("a"), g.newSession("b")
	g.register(s, echoTool)
	g.register(other, echoTool)
	args := map[string]any{"text": "hi"}
	first, second := g.startCall(s, "echo", args, 0), g.startCall(s, "echo", args, 0)

	refused := func(what string) {
		t.Helper()
		status, retry, body := g.postForRetry("/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "echo", "args": args, "wait": false})
		if status != 429 || errorCode(body) != "RATE_LIMITED" || retry != "5" {
			t.Fatalf("%s: %d, Retry-After %q, %s; want 429 RATE_LIMITED with 5", what, status, retry, body)
		}
	}
	refused("third call")
	if n := g.count(t, `SELECT COUNT(*) FROM calls WHERE session_id = ?`, s.ID); n != 2 {
		t.Fatalf("calls stored: %d, want 2", n)
	}
	g.startCall(other, "echo", args, 0) // another session's count is its own

	if status, _ := g.answer(s, first.ID, "done"); status != 200 {
		t.Fatalf("answer: %d", status)
	}
	g.startCall(s, "echo", args, 0)
	refused("after the answer, full again")
	g.call("POST", "/v1/calls/"+second.ID+"/cancel", testAgentKey, nil, 200, nil)
	g.startCall(s, "echo", args, 0)
	refused("after the cancel, full again")
}

// TestOpenCallsCountedAfterRestart: the open calls a stopped process left
// count against their session in the next one (recovered at start-up, not
// read per call), and free their place when they end there.
func TestOpenCallsCountedAfterRestart(t *testing.T) {
	cfg := server.ConfigForTest(t)
	cfg.MaxOpenCallsPerSession = 2
	srv, stop := server.StartForTest(t, cfg)
	g := &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	s := g.newSession("a")
	g.register(s, echoTool)
	args := map[string]any{"text": "hi"}
	first := g.startCall(s, "echo", args, 60_000)
	g.startCall(s, "echo", args, 60_000)
	stop()

	srv, _ = server.StartForTest(t, cfg)
	g = &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	status, retry, body := g.postForRetry("/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "echo", "args": args, "wait": false})
	if status != 429 || retry != "5" {
		t.Fatalf("a third call after the restart: %d, Retry-After %q, %s; want 429", status, retry, body)
	}
	if status, _ := g.answer(s, first.ID, "done"); status != 200 {
		t.Fatalf("answer after the restart: %d", status)
	}
	g.startCall(s, "echo", args, 0)
}

// TestResumedRunsCountAfterRestart: a run a session's token started, left
// running by a stopped gateway, holds its slot in the next one, which
// goes on with it; its end frees the slot.
func TestResumedRunsCountAfterRestart(t *testing.T) {
	m, gates := gatedModel(t, "a")
	cfg := server.ConfigForTest(t)
	cfg.LLMBaseURL, cfg.LLMModel, cfg.MaxRunsPerSession = m.URL, "fake-model", 1
	srv, stop := server.StartForTest(t, cfg)
	g := &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	s := g.newSession("chat")
	runs := "/v1/sessions/" + s.ID + "/runs"
	var run runRecord
	g.call("POST", runs, s.Token, map[string]any{"input": "a", "wait": false}, 202, &run)
	stop() // the run stays running in the store

	srv, _ = server.StartForTest(t, cfg)
	g = &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	status, retry, body := g.postForRetry(runs, s.Token, map[string]any{"input": "b", "wait": false})
	if status != 429 || retry != "5" {
		t.Fatalf("a second run beside the resumed one: %d, Retry-After %q, %s; want 429", status, retry, body)
	}
	close(gates["a"]) // the resumed run ends; a refused start changes nothing, so ask until one is let in
	testwait.Until(t, 10*time.Second, "a run accepted after the resumed one ended", func() bool {
		status, _, _ := g.postForRetry(runs, s.Token, map[string]any{"input": "b", "wait": false})
		return status == 202
	})
	if got := g.getRun(run.ID); got.Status != "finished" {
		t.Fatalf("the resumed run: %s, want finished", got.Status)
	}
}
