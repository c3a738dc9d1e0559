package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// TestSurvivesKill runs the built binary, kills it with SIGKILL while calls
// are open, and starts it again on the same database: the session, token
// and tool are still there, the client that reconnects with its old token
// receives every open call once and answers it once, callers re-attach and
// get the answers, and the call whose deadline passed during the outage
// ends timed_out and is cancelled on the client's stream. SIGTERM then
// stops the gateway gracefully.
func TestSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proc := gatewaytest.Start(t, "--agent-key", testAgentKey, "--heartbeat", "500ms")
	g := &gateway{t: t, URL: proc.URL}
	s := g.newSession("survivor")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	st.nextOfType("ready")

	var open []string
	for _, text := range []string{"one", "two", "three"} {
		open = append(open, g.startCall(s, "echo", map[string]any{"text": text}, 60_000).ID)
	}
	short := g.startCall(s, "echo", map[string]any{"text": "short"}, 1000)
	lastID := ""
	for range 4 {
		lastID = st.nextOfType("tool_call_request").ID
	}
	shortDeadline, err := time.Parse(time.RFC3339, short.Deadline)
	if err != nil {
		t.Fatal(err)
	}

	proc.Kill()
	st.Close()
	// Stay down past the short call's deadline.
	time.Sleep(time.Until(shortDeadline) + 200*time.Millisecond)
	proc.Restart(t)

	// The token still works; the tool is still registered.
	var view struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	g.call("GET", "/v1/sessions/"+s.ID, s.Token, nil, 200, &view)
	if len(view.Tools) != 1 || view.Tools[0].Name != "echo" {
		t.Fatalf("tools after restart = %+v", view.Tools)
	}

	// The client reconnects as SDKs do, with its last event id.
	st2 := g.openStream(s, lastID)
	st2.nextOfType("ready")
	delivered := map[string]int{}
	cancelledShort := false
	for len(delivered) < len(open) || !cancelledShort {
		ev := st2.next()
		switch ev.Event {
		case "tool_call_request":
			id := ev.Data["id"].(string)
			if id == short.ID {
				t.Fatalf("the expired call was delivered again")
			}
			delivered[id]++
			if delivered[id] > 1 {
				t.Fatalf("call %s delivered twice on one stream", id)
			}
		case "call_cancelled":
			if ev.Data["id"] == short.ID && ev.Data["reason"] == "timeout" {
				cancelledShort = true
			}
		}
	}
	for _, id := range open {
		if delivered[id] != 1 {
			t.Fatalf("open call %s delivered %d times", id, delivered[id])
		}
		status, reply := g.answer(s, id, "answered after restart")
		if status != 200 || reply["duplicate"] != nil {
			t.Fatalf("answer %s: %d %v", id, status, reply)
		}
	}
	for _, id := range open {
		got := g.waitCall(id)
		if got.Status != "completed" || string(got.Output) != `"answered after restart"` {
			t.Fatalf("call %s after restart = %+v", id, got)
		}
	}
	if got := g.waitCall(short.ID); got.Status != "timed_out" || got.Error == nil || got.Error.Code != "TIMEOUT" {
		t.Fatalf("short call = %+v", got)
	}

	st2.Close()
	proc.Stop()
	if !strings.Contains(proc.Log(), "shutting down") {
		t.Errorf("no graceful shutdown in the log:\n%s", proc.Log())
	}
}
