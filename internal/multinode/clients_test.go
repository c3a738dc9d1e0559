package multinode_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/mobile"
)

// ledger records every execution of every SDK client's handler, by call id.
type ledger struct {
	mu   sync.Mutex
	runs map[string][]string // call id → the clients that ran it
}

func newLedger() *ledger { return &ledger{runs: map[string][]string{}} }

func (l *ledger) record(callID, client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[callID] = append(l.runs[callID], client)
}

// executions returns the clients that ran the call.
func (l *ledger) executions(callID string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.runs[callID]...)
}

// echoHandler answers with the call id and the client's name.
type echoHandler struct {
	name   string
	ledger *ledger
}

func (h echoHandler) HandleCall(call *mobile.Call) (string, error) {
	h.ledger.record(call.ID(), h.name)
	out, err := json.Marshal(echoOutput{Call: call.ID(), By: h.name})
	return string(out), err
}

// warnings keeps an SDK client's warnings and errors for a failure message.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) Log(level, message string) {
	if level != mobile.LevelWarn && level != mobile.LevelError {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, level+": "+message)
	if len(w.lines) > 50 {
		w.lines = w.lines[1:]
	}
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// connectSDK connects a Go SDK client named name to baseURL over
// transport, offering echoTool, closed when the test ends.
func connectSDK(t *testing.T, baseURL, name, transport string, l *ledger) (*mobile.Client, *warnings) {
	t.Helper()
	c := mobile.NewClient(baseURL)
	logs := &warnings{}
	c.SetLogger(logs)
	c.SetClientInfo(name, "1", "other")
	if err := c.SetTransport(transport); err != nil {
		t.Fatal(err)
	}
	c.SetWorkers(4)
	if err := c.RegisterTool(echoTool, "Answers with its call id", ""); err != nil {
		t.Fatal(err)
	}
	c.SetCallHandler(echoHandler{name: name, ledger: l})
	if err := c.Connect(); err != nil {
		t.Fatalf("%s: connect to %s: %v\n%s", name, baseURL, err, logs)
	}
	t.Cleanup(c.Close)
	return c, logs
}

// wantEcho checks that output is the echo of call id by client.
func wantEcho(t *testing.T, output []byte, id, client string) {
	t.Helper()
	var got echoOutput
	if err := json.Unmarshal(output, &got); err != nil || got.Call != id || (client != "" && got.By != client) {
		t.Errorf("call %s: output %s, want the echo of %s", id, output, fmt.Sprintf("%s by %s", id, client))
	}
}
