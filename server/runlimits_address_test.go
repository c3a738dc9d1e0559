package server_test

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
)

// TestRunStartsPerAddress: one client address starts AddressRunBurst runs
// with session tokens, whatever the sessions (each of them well within
// its own limits), then is refused 429 RATE_LIMITED with the seconds until
// its next token, and nothing is stored; the agent key is not held to it.
// Before this bound, every new session brought a fresh burst of its own.
func TestRunStartsPerAddress(t *testing.T) {
	m := startFakeModel(t, func(chatRequest) modelTurn { return modelTurn{Content: "ok"} })
	g := modelGateway(t, m, func(c *serverConfig) {
		c.AddressRunRate, c.AddressRunBurst = 0.01, 6
		c.MaxRunsPerSession, c.RunBurst, c.MaxSessionRuns = 4, 10, -1
	})
	for i := range 3 {
		s := g.newSession("chat")
		for j := range 2 {
			if status, _, body := g.postForRetry("/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": "hi", "wait": false}); status != 202 {
				t.Fatalf("session %d, run %d: %d %s", i+1, j+1, status, body)
			}
		}
	}
	fresh := g.newSession("chat")
	status, retry, body := g.postForRetry("/v1/sessions/"+fresh.ID+"/runs", fresh.Token, map[string]any{"input": "hi", "wait": false})
	if status != 429 || errorCode(body) != "RATE_LIMITED" || retry != "100" {
		t.Fatalf("a fresh session's first run, over the address's burst: %d, Retry-After %q, %s; want 429 RATE_LIMITED with 100", status, retry, body)
	}
	if n := g.count(t, `SELECT COUNT(*) FROM runs`); n != 6 {
		t.Fatalf("runs stored: %d, want 6 (the refused one is not)", n)
	}
	if status, _, body := g.postForRetry("/v1/runs", testAgentKey, map[string]any{"session_id": fresh.ID, "input": "hi", "wait": false}); status != 202 {
		t.Fatalf("the agent key's run: %d %s", status, body)
	}
}

// TestSessionRunsInProgressInGateway: the runs started with session
// tokens in progress at once are bounded in the whole gateway
// (MaxSessionRuns), whatever the sessions: past it 429 RATE_LIMITED with
// Retry-After, nothing stored; the agent key's runs are not counted; once
// one ends another may start.
func TestSessionRunsInProgressInGateway(t *testing.T) {
	m, gates := gatedModel(t, "a", "b", "agent")
	g := modelGateway(t, m, func(c *serverConfig) { c.MaxSessionRuns, c.AddressRunBurst = 3, -1 })
	first := g.newSession("chat")
	held := g.runStream("/v1/sessions/"+first.ID+"/runs", first.Token, map[string]any{"input": "a"})
	if status, _, body := g.postForRetry("/v1/sessions/"+first.ID+"/runs", first.Token, map[string]any{"input": "b", "wait": false}); status != 202 {
		t.Fatalf("second run: %d %s", status, body)
	}
	second := g.newSession("chat")
	runs := "/v1/sessions/" + second.ID + "/runs"
	if status, _, body := g.postForRetry(runs, second.Token, map[string]any{"input": "b", "wait": false}); status != 202 {
		t.Fatalf("third run, another session: %d %s", status, body)
	}
	status, retry, body := g.postForRetry(runs, second.Token, map[string]any{"input": "b", "wait": false})
	if status != 429 || errorCode(body) != "RATE_LIMITED" || retry != "5" {
		t.Fatalf("fourth run: %d, Retry-After %q, %s; want 429 RATE_LIMITED with 5", status, retry, body)
	}
	if status, _, body := g.postForRetry("/v1/runs", testAgentKey, map[string]any{"session_id": second.ID, "input": "agent", "wait": false}); status != 202 {
		t.Fatalf("the agent key's run: %d %s", status, body)
	}
	if n := g.count(t, `SELECT COUNT(*) FROM runs`); n != 4 {
		t.Fatalf("runs stored: %d, want 4 (the refused one is not)", n)
	}
	close(gates["a"])
	held.untilRunEvent("run_finished")
	if status, _, body := g.postForRetry(runs, second.Token, map[string]any{"input": "b", "wait": false}); status != 202 {
		t.Fatalf("a run after one ended: %d %s", status, body)
	}
}

// TestDefaultsBoundOneAddressRuns is the review's reproduction with the
// default limits: one address with many sessions, several runs each, all
// held by the model. Runs in progress stay at MaxSessionRuns (16), not
// sessions × MaxRunsPerSession.
func TestDefaultsBoundOneAddressRuns(t *testing.T) {
	m, _ := gatedModel(t, "hold")
	g := modelGateway(t, m, nil)
	accepted := 0
	for range 10 {
		s := g.newSession("chat")
		for range 3 {
			status, _, body := g.postForRetry("/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": "hold", "wait": false})
			switch status {
			case 202:
				accepted++
			case 429:
			default:
				t.Fatalf("run: %d %s", status, body)
			}
		}
	}
	if accepted != 16 {
		t.Fatalf("runs accepted from one address: %d, want 16 (the default --max-session-runs)", accepted)
	}
	testwait.Until(t, 10*time.Second, "16 model requests held", func() bool { return len(m.Requests()) >= 16 })
}
