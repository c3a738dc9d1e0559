//go:build linux

package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/smalldisk"
	"github.com/toolgate/toolgate/server"
)

// TestFullDiskRefusesWritesAndRecovers runs a gateway whose database lives
// on a small tmpfs and fills the rest of it. Every kind of write — a new
// session, a tool registration, a call, an answer — is then refused with
// 503 STORAGE_FULL and changes nothing; reads are still served (a call, the
// list, a stream that delivers the open call, a poll). Once the
// filler is deleted, the same writes succeed without a restart, and after
// a restart exactly the calls a caller was told were created exist.
func TestFullDiskRefusesWritesAndRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := smalldisk.Mount(t, "8m")
	cfg := server.ConfigForTest(t)
	cfg.DBPath = filepath.Join(dir, "toolgate.db")
	srv, stop := server.StartForTest(t, cfg)
	g := &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}

	s := g.newSession("before the disk filled")
	g.register(s, echoTool)
	acked := []string{g.startCall(s, "echo", map[string]any{"text": "stored"}, 60_000).ID}

	filler := smalldisk.Fill(t, dir)
	// The WAL may still have room from earlier writes: calls are created
	// until one is refused, each acknowledged one remembered.
	pad := strings.Repeat("x", 2000)
	refused := false
	for range 2000 {
		status, body := g.do("POST", "/v1/calls", testAgentKey,
			map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": pad}, "wait": false})
		if status == 202 {
			var rec callRecord
			if err := json.Unmarshal(body, &rec); err != nil || rec.ID == "" {
				t.Fatalf("a created call without an id: %s", body)
			}
			acked = append(acked, rec.ID)
			continue
		}
		wantStorageFull(t, "the call that found the disk full", status, body)
		refused = true
		break
	}
	if !refused {
		t.Fatalf("%d calls were created on a full disk", len(acked))
	}

	// Every kind of write is refused now, with the same clear error.
	status, body := g.do("POST", "/v1/sessions", "", map[string]any{"client": map[string]any{"name": "late"}})
	wantStorageFull(t, "creating a session", status, body)
	status, body = g.do("POST", "/v1/sessions/"+s.ID+"/tools", s.Token, map[string]any{"type": "register_tools",
		"tools": []any{map[string]any{"name": "shout", "description": "Shout the text back"}}})
	wantStorageFull(t, "registering a tool", status, body)
	status, body = g.do("POST", "/v1/calls", testAgentKey,
		map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "refused"}, "wait": false})
	wantStorageFull(t, "creating a call", status, body)
	status, body = g.do("POST", "/v1/sessions/"+s.ID+"/results", s.Token,
		map[string]any{"type": "tool_result", "id": acked[0], "success": true, "output": "too late"})
	wantStorageFull(t, "answering a call", status, body)

	// Reads are still served, and show nothing of the refused writes.
	var view struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	g.call("GET", "/v1/sessions/"+s.ID, s.Token, nil, 200, &view)
	if len(view.Tools) != 1 || view.Tools[0].Name != "echo" {
		t.Fatalf("tools on a full disk = %+v, want only echo", view.Tools)
	}
	var first callRecord
	g.call("GET", "/v1/calls/"+acked[0], testAgentKey, nil, 200, &first)
	if first.Status == "completed" {
		t.Fatalf("the refused answer was applied: %+v", first)
	}
	st := g.openStream(s, "")
	st.nextOfType("ready")
	if ev := st.nextOfType("tool_call_request"); ev.Data["id"] != acked[0] {
		t.Fatalf("the stream opened on a full disk sent %v first, want call %s", ev.Data, acked[0])
	}
	st.Close()
	g.call("GET", "/v1/sessions/"+s.ID+"/poll?wait_ms=0", s.Token, nil, 200, nil)
	if got := listCallIDs(g, s.ID); !sameIDs(got, acked) {
		t.Fatalf("calls listed on a full disk = %d, want the %d acknowledged", len(got), len(acked))
	}

	// Space returns: the same writes succeed, without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	later := g.newSession("after the disk was freed")
	g.register(later, echoTool)
	g.register(s, map[string]any{"name": "shout", "description": "Shout the text back"})
	call := g.startCall(later, "echo", map[string]any{"text": "after"}, 60_000)
	if status, reply := g.answer(s, acked[0], "answered after"); status != 200 {
		t.Fatalf("answer after the disk was freed: %d %v", status, reply)
	}
	if rec := g.waitCall(acked[0]); rec.Status != "completed" {
		t.Fatalf("call answered after the disk was freed = %+v", rec)
	}

	// After a restart, exactly the acknowledged calls exist.
	stop()
	srv2, _ := server.StartForTest(t, cfg)
	g2 := &gateway{t: t, URL: srv2.URL(), Server: srv2, DBPath: cfg.DBPath}
	if got := listCallIDs(g2, s.ID); !sameIDs(got, acked) {
		t.Fatalf("calls of the first session after a restart = %d, want the %d acknowledged", len(got), len(acked))
	}
	if got := listCallIDs(g2, later.ID); !sameIDs(got, []string{call.ID}) {
		t.Fatalf("calls of the later session after a restart = %v, want [%s]", got, call.ID)
	}
}

// wantStorageFull fails the test unless the reply is 503 STORAGE_FULL
// with a message that names the disk.
func wantStorageFull(t *testing.T, what string, status int, body []byte) {
	t.Helper()
	var reply toolgate.ErrorBody
	if err := json.Unmarshal(body, &reply); err != nil || status != 503 || reply.Error.Code != toolgate.EStorageFull ||
		!strings.Contains(reply.Error.Message, "disk") {
		t.Fatalf("%s on a full disk: %d %s, want 503 %s naming the disk", what, status, body, toolgate.EStorageFull)
	}
}

// listCallIDs lists the ids of a session's calls.
func listCallIDs(g *gateway, sid string) []string {
	g.t.Helper()
	var list struct {
		Calls []callRecord `json:"calls"`
	}
	g.call("GET", "/v1/calls?limit=10000&session_id="+sid, testAgentKey, nil, 200, &list)
	ids := make([]string, 0, len(list.Calls))
	for _, c := range list.Calls {
		ids = append(ids, c.ID)
	}
	return ids
}

// sameIDs reports whether a and b hold the same ids, in any order.
func sameIDs(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
