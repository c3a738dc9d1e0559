package server_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// limitedTool may be called twice a minute per session.
var limitedTool = map[string]any{
	"name": "send_sms", "description": "Send a text message",
	"rate_limit": map[string]any{"requests_per_minute": 2, "requests_per_hour": 100},
}

// TestRateLimit: over its limit a tool's call is 429 RATE_LIMITED with
// Retry-After and nothing is stored; limits are per session; of calls made
// at the same moment exactly the limit get through, because the count and
// the insert share one transaction.
func TestRateLimit(t *testing.T) {
	g := startGateway(t, nil)
	s, other := g.newSession("a"), g.newSession("b")
	g.register(s, limitedTool)
	g.register(other, limitedTool)

	g.startCall(s, "send_sms", nil, 0)
	g.startCall(s, "send_sms", nil, 0)
	req := mustRequest(t, "POST", g.URL+"/v1/calls", map[string]any{"session_id": s.ID, "tool": "send_sms", "wait": false})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || retry < 1 || retry > 60 {
		t.Fatalf("third call: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "send_sms", "wait": false})
	if status != 429 || errorCode(body) != "RATE_LIMITED" {
		t.Fatalf("fourth call: %d %s", status, body)
	}
	var stored int
	if err := g.db(t).Get(&stored, `SELECT COUNT(*) FROM calls WHERE session_id = ?`, s.ID); err != nil || stored != 2 {
		t.Fatalf("calls stored = %d (%v), want 2", stored, err)
	}

	// The other session has its own count; its calls race each other.
	var wg sync.WaitGroup
	statuses := make([]int, 6)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = g.do("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": other.ID, "tool": "send_sms", "wait": false})
		}()
	}
	wg.Wait()
	accepted := 0
	for _, st := range statuses {
		switch st {
		case 202:
			accepted++
		case 429:
		default:
			t.Fatalf("concurrent statuses = %v", statuses)
		}
	}
	if accepted != 2 {
		t.Fatalf("concurrent calls accepted = %d, want 2 (%v)", accepted, statuses)
	}
}
