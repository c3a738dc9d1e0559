package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
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
	g := modelGateway(t, m, func(c *serverConfig) { c.MaxSessionRuns, c.AddressRunBurst, c.MaxRunsPerAddress = 3, -1, -1 })
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
// held by the model. Runs in progress from that address stay at its share
// of --max-runs-all-sessions (a quarter of 16), not sessions ×
// MaxRunsPerSession nor the whole gateway's 16: another address, and the
// agent key, still start runs. Before, the one address took all 16 slots
// and every other address got 429 until its runs ended.
func TestDefaultsBoundOneAddressRuns(t *testing.T) {
	m, _ := gatedModel(t, "hold")
	g := modelGateway(t, m, nil)
	accepted := 0
	var refusal []byte
	for range 10 {
		s := g.newSession("chat")
		for range 3 {
			status, retry, body := g.postForRetry("/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": "hold", "wait": false})
			switch status {
			case 202:
				accepted++
			case 429:
				if retry == "" {
					t.Fatalf("429 without Retry-After: %s", body)
				}
				if refusal == nil {
					refusal = body // the first: later ones may be the address's pace
				}
			default:
				t.Fatalf("run: %d %s", status, body)
			}
		}
	}
	if accepted != 4 {
		t.Fatalf("runs accepted from one address: %d, want 4 (a quarter of the default --max-runs-all-sessions)", accepted)
	}
	if !strings.Contains(string(refusal), "client address 127.0.0.1 already has 4 runs") {
		t.Fatalf("the refusal does not say which share is full: %s", refusal)
	}
	other := g.newSession("elsewhere")
	if status, body := g.postFrom(t, "127.0.0.2", "/v1/sessions/"+other.ID+"/runs", other.Token, map[string]any{"input": "hold", "wait": false}); status != 202 {
		t.Fatalf("a run from another address: %d %s", status, body)
	}
	if status, _, body := g.postForRetry("/v1/runs", testAgentKey, map[string]any{"input": "hold", "wait": false}); status != 202 {
		t.Fatalf("the agent key's run: %d %s", status, body)
	}
	testwait.Until(t, 10*time.Second, "6 model requests held", func() bool { return len(m.Requests()) >= 6 })
}

// postFrom posts body as JSON from the local address ip (any of 127/8
// reaches the gateway on Linux), so that the gateway sees another client
// address.
func (g *gateway) postFrom(t *testing.T, ip, path, secret string, body any) (int, []byte) {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	defer client.CloseIdleConnections()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", g.URL+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, reply
}
