package mobile_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// TestClientComesBackAfterARestore: a Go SDK client stays up while its
// gateway is backed up, killed, its database deleted and the backup
// restored. Its stream cursor, moved on by events after the backup, is
// beyond the restored stream and refused (400); the client connects again
// without it and receives calls: the one still open since before the
// backup that it holds is answered, and a call made after the restore
// reaches it.
func TestClientComesBackAfterARestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, transport := range []string{mobile.TransportSSE, mobile.TransportPoll} {
		t.Run(transport, func(t *testing.T) { clientComesBackAfterARestore(t, transport) })
	}
}

func clientComesBackAfterARestore(t *testing.T, transport string) {
	g := gatewaytest.Start(t)
	client, _ := newTestClient(t, g, transport)
	if err := client.RegisterTool("hold", "Answers when released", ""); err != nil {
		t.Fatal(err)
	}
	client.SetWorkers(4)
	seen := make(chan string, 16)
	release := make(chan struct{})
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		seen <- call.ID()
		if strings.Contains(call.ArgsJSON(), `"hold"`) {
			select {
			case <-release:
			case <-time.After(60 * time.Second):
			}
		}
		return `"done"`, nil
	}))
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	var held toolgate.Call
	body := map[string]any{"session_id": client.SessionID(), "tool": "hold", "args": map[string]any{"hold": true}, "timeout_ms": 600000, "wait": false}
	if status := agentRequest(t, g, http.MethodPost, "/v1/calls", body, &held); status != http.StatusAccepted {
		t.Fatalf("POST /v1/calls: %d", status)
	}
	if id := receive(t, seen); id != held.ID {
		t.Fatalf("handler got %s, want %s", id, held.ID)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if out, err := exec.Command(gatewaytest.Binary(t), "backup", "--db", g.DBPath, "--to", backup).CombinedOutput(); err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	// Calls after the backup move the client's cursor on.
	for range 3 {
		if got := callTool(t, g, client.SessionID(), "hold", `{}`); got.Status != toolgate.StatusCompleted {
			t.Fatalf("call after the backup: %+v", got)
		}
		<-seen
	}

	g.Kill()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(g.DBPath + suffix)
	}
	if out, err := exec.Command(gatewaytest.Binary(t), "restore", "--db", g.DBPath, "--from", backup).CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	g.Restart(t)
	if got := callTool(t, g, client.SessionID(), "hold", `{}`); got.Status != toolgate.StatusCompleted {
		t.Fatalf("a call after the restore: %+v", got)
	}
	close(release)
	if got := getCall(t, g, held.ID, 10000); got.Status != toolgate.StatusCompleted {
		t.Fatalf("the call held since before the backup: %+v", got)
	}
}
