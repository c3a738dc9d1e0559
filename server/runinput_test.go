package server_test

import (
	"strings"
	"testing"
)

// TestRunInputBounded: a run whose model asks for a tool at every turn
// resends the whole conversation each time; with --max-run-input-bytes
// at 64 KiB and max_steps 64, the run fails MAX_INPUT once its next
// request would pass the bound, and what the model was sent in all stays
// near it. Before, the run went on for its 64 steps: one request of a few
// kilobytes became a few hundred sent to the operator's model.
func TestRunInputBounded(t *testing.T) {
	const limit = 64 << 10
	m := startFakeModel(t, func(chatRequest) modelTurn {
		return modelTurn{ToolCalls: []chatToolCall{callTool("c", "current_time", `{}`)}}
	})
	g := modelGateway(t, m, func(c *serverConfig) { c.MaxRunInputBytes = limit })
	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": strings.Repeat("tell me the time ", 200), "max_steps": 64}, 200, &run)
	if run.Status != "failed" || run.Error == nil || run.Error.Code != "MAX_INPUT" || !strings.Contains(run.Error.Message, "65536 bytes one run may send") {
		t.Fatalf("run: %s after %d steps, error %+v; want failed with MAX_INPUT", run.Status, run.Steps, run.Error)
	}
	requests := len(m.Requests())
	if requests < 2 || requests >= 64 {
		t.Fatalf("the model was asked %d times; want a few, fewer than max_steps", requests)
	}
	if sent := m.BodyBytes(); sent > limit*5/4 {
		t.Fatalf("the model was sent %d bytes in %d requests; want at most about %d", sent, requests, limit)
	}
}

// TestRunRequestOverInputBound: a run whose messages alone pass
// --max-run-input-bytes is refused 413 PAYLOAD_TOO_LARGE, and neither
// stored nor sent to the model.
func TestRunRequestOverInputBound(t *testing.T) {
	m := startFakeModel(t, func(chatRequest) modelTurn { return modelTurn{Content: "ok"} })
	g := modelGateway(t, m, func(c *serverConfig) { c.MaxRunInputBytes = 4096 })
	s := g.newSession("chat")
	status, _, body := g.postForRetry("/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": strings.Repeat("x", 5000)})
	if status != 413 || errorCode(body) != "PAYLOAD_TOO_LARGE" || !strings.Contains(string(body), "4096 bytes one run may send") {
		t.Fatalf("an oversize run: %d %.300s; want 413 PAYLOAD_TOO_LARGE", status, body)
	}
	if n := g.count(t, `SELECT COUNT(*) FROM runs`); n != 0 || len(m.Requests()) != 0 {
		t.Fatalf("runs stored: %d, model requests: %d; want none", n, len(m.Requests()))
	}
}
