package server_test

import (
	"strings"
	"testing"
)

// TestDenyReasonOnBothBackends: a deny reason holding a NUL character, or
// longer than 1000 characters, is refused 400 BAD_REQUEST on SQLite and
// on PostgreSQL alike (PostgreSQL's TEXT cannot hold NUL: it was a 500
// there), and the call still awaits approval; 1000 characters of two
// bytes each are accepted (the limit counts characters).
func TestDenyReasonOnBothBackends(t *testing.T) {
	for name, start := range map[string]func(t *testing.T) *gateway{
		"sqlite":   func(t *testing.T) *gateway { return startGateway(t, nil) },
		"postgres": func(t *testing.T) *gateway { return clusterNodes(t, 1, nil)[0] },
	} {
		t.Run(name, func(t *testing.T) {
			g := start(t)
			s := g.newSession("phone")
			g.register(s, guardedTool)
			call := g.startCall(s, "delete_photos", map[string]any{"album": "old"}, 0)
			for what, reason := range map[string]string{
				"a NUL":              "no\u0000way",
				"1001 characters":    strings.Repeat("é", 1001),
				"a NUL after spaces": "  \u0000  ",
			} {
				status, body := g.do("POST", "/v1/calls/"+call.ID+"/deny", testAgentKey, map[string]any{"reason": reason})
				if status != 400 || errorCode(body) != "BAD_REQUEST" {
					t.Fatalf("deny with %s: %d %s", what, status, body)
				}
			}
			if got := g.waitCallNow(call.ID); got.Status != "awaiting_approval" {
				t.Fatalf("after refused denies: %+v", got)
			}
			long := strings.Repeat("é", 1000)
			var denied callRecord
			g.call("POST", "/v1/calls/"+call.ID+"/deny", testAgentKey, map[string]any{"reason": long}, 200, &denied)
			if denied.Status != "denied" || denied.Error == nil || denied.Error.Message != "the call was denied: "+long {
				t.Fatalf("denied with 1000 characters: %+v", denied)
			}
		})
	}
}
