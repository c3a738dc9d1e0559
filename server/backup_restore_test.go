package server_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// toolgateCommand runs the built binary with args and returns its output.
func toolgateCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(gatewaytest.Binary(t), args...).CombinedOutput()
	return string(out), err
}

// TestBackupRestoresOpenCalls is the operator's backup and restore, with
// the real binary: calls are made and left open on a client's stream,
// toolgate backup copies the serving gateway's database, more calls are
// made, the gateway is killed with SIGKILL and its database deleted with
// its -wal and -shm, toolgate restore puts the backup in place, and the
// gateway starts on it. Every call committed before the backup is there:
// the completed one with its output, the open ones open, delivered again
// to the client when it reconnects and answered then. The calls made after
// the backup are the ones lost (404), as the operator guide says; the
// client's cursor from after the backup is beyond the restored stream and
// refused, and it connects again without one.
func TestBackupRestoresOpenCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proc := gatewaytest.Start(t, "--agent-key", testAgentKey, "--heartbeat", "500ms")
	g := &gateway{t: t, URL: proc.URL}
	s := g.newSession("restored")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	st.nextOfType("ready")

	done := g.startCall(s, "echo", map[string]any{"text": "done"}, 600_000)
	st.nextOfType("tool_call_request")
	if status, _ := g.answer(s, done.ID, "answered before the backup"); status != 200 {
		t.Fatalf("answer: %d", status)
	}
	var open []string
	for _, text := range []string{"open one", "open two"} {
		open = append(open, g.startCall(s, "echo", map[string]any{"text": text}, 600_000).ID)
		st.nextOfType("tool_call_request")
	}

	backup := t.TempDir() + "/backup.db"
	if out, err := toolgateCommand(t, "backup", "--db", proc.DBPath, "--to", backup); err != nil {
		t.Fatalf("toolgate backup: %v\n%s", err, out)
	}

	lost := []string{}
	after := g.startCall(s, "echo", map[string]any{"text": "after"}, 600_000)
	st.nextOfType("tool_call_request")
	g.answer(s, after.ID, "answered after the backup")
	lost = append(lost, after.ID)
	lost = append(lost, g.startCall(s, "echo", map[string]any{"text": "open after"}, 600_000).ID)
	lastID := st.nextOfType("tool_call_request").ID
	if got := g.waitCall(after.ID); got.Status != "completed" {
		t.Fatalf("call after the backup = %+v", got)
	}

	proc.Kill()
	st.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(proc.DBPath + suffix); err != nil {
			t.Fatal(err)
		}
	}
	// A restore onto the database of a running gateway is refused; here
	// none runs, and the database is gone.
	if out, err := toolgateCommand(t, "restore", "--db", proc.DBPath, "--from", backup); err != nil {
		t.Fatalf("toolgate restore: %v\n%s", err, out)
	}
	proc.Restart(t)

	if got := g.waitCall(done.ID); got.Status != "completed" || string(got.Output) != `"answered before the backup"` {
		t.Fatalf("completed call after restore = %+v", got)
	}
	for _, id := range open {
		var rec callRecord
		g.call("GET", "/v1/calls/"+id, testAgentKey, nil, 200, &rec)
		if rec.Status != "pending" && rec.Status != "delivered" {
			t.Fatalf("open call %s after restore = %+v", id, rec)
		}
	}
	for _, id := range lost {
		if status, body := g.do("GET", "/v1/calls/"+id, testAgentKey, nil); status != 404 {
			t.Fatalf("call %s made after the backup: %d %s, want 404", id, status, body)
		}
	}

	// The client comes back with the cursor it had: beyond the restored
	// stream, refused; it connects again without one.
	status, body := g.do("GET", "/v1/sessions/"+s.ID+"/events?last_event_id="+lastID, s.Token, nil)
	if status != 400 || !strings.Contains(string(body), "beyond") {
		t.Fatalf("stream with the cursor from after the backup: %d %s", status, body)
	}
	st2 := g.openStream(s, "")
	delivered := map[string]int{}
	for len(delivered) < len(open) {
		ev := st2.next()
		if ev.Event != "tool_call_request" {
			continue
		}
		id := ev.Data["id"].(string)
		delivered[id]++
		for _, l := range lost {
			if id == l {
				t.Fatalf("a call made after the backup was delivered: %s", id)
			}
		}
	}
	for _, id := range open {
		if delivered[id] != 1 {
			t.Fatalf("open call %s delivered %d times after restore", id, delivered[id])
		}
		if status, reply := g.answer(s, id, "answered after restore"); status != 200 {
			t.Fatalf("answer %s: %d %v", id, status, reply)
		}
		if got := g.waitCall(id); got.Status != "completed" || string(got.Output) != `"answered after restore"` {
			t.Fatalf("call %s = %+v", id, got)
		}
	}

	// With the gateway serving again, a restore over its database is
	// refused and changes nothing.
	out, err := toolgateCommand(t, "restore", "--db", proc.DBPath, "--from", backup, "--force")
	if err == nil || !strings.Contains(out, "open in a running gateway") {
		t.Fatalf("restore over a serving gateway: %v\n%s", err, out)
	}
	if got := g.waitCall(open[0]); got.Status != "completed" {
		t.Fatalf("after the refused restore = %+v", got)
	}
}
