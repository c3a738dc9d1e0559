package multinode_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// Node 2's database connections are cut (every backend whose
// application_name is node2 is terminated, as a network cut or a
// database restart would) while a caller waits on it and its client's
// stream is open. Node 2 keeps serving: its pool connects again, its
// listener connects again and reads what it may have missed, so the
// waiting caller gets the answer committed on node 1, its client gets a
// call made on node 1, and new calls through it work.
func TestConnectionsCut(t *testing.T) {
	c := startCluster(t, 3, "--heartbeat", "1s")
	n1, n2 := c.Nodes[0], c.Nodes[1]
	l := newLedger()
	onNode2, logs := connectSDK(t, n2.URL, "on-node2", mobile.TransportSSE, l)
	byHand := newSession(t, n1.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A caller waits on node 2 for a call of the session on node 1.
	status, waiting, err := createCall(ctx, n2.URL, "cut-waiting", byHand.ID, map[string]any{}, 40*time.Second, false)
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("create on node 2: %d %v", status, err)
	}
	waited := make(chan callReply, 1)
	go func() {
		status, call, err := readCall(ctx, n2.URL, waiting.ID, 30*time.Second)
		waited <- callReply{status, call, err}
	}()
	time.Sleep(300 * time.Millisecond) // the wait is held

	cut, err := pg.Server(t).CutConnections(ctx, "node2")
	if err != nil {
		t.Fatal(err)
	}
	if cut == 0 {
		t.Fatal("node 2 had no database connection to cut")
	}
	t.Logf("cut %d connections of node 2", cut)

	// The answer is committed by node 1; node 2 must learn of it.
	if status, reply, err := answer(ctx, n1.URL, byHand, waiting.ID, echoOutput{Call: waiting.ID, By: "node1"}); err != nil || status != http.StatusOK || reply.Status != "completed" {
		t.Fatalf("answer on node 1: %d %+v %v", status, reply, err)
	}
	r := <-waited
	if r.err != nil || r.status != http.StatusOK || r.call.Status != toolgate.StatusCompleted {
		t.Fatalf("the caller waiting on node 2 across the cut: %d %s %v\nnode 2 log:\n%s", r.status, r.call.Status, r.err, n2.LogTail(40))
	}
	wantEcho(t, r.call.Output, waiting.ID, "node1")

	// A call made on node 1 reaches the client whose stream is on node 2,
	// and node 2 takes calls and answers. A create may meet the cut once
	// (503): the same Idempotency-Key sent again is the retry a caller
	// makes.
	for i, caller := range []*gatewaytest.Gateway{n1, n2, n2} {
		key := "cut-after-" + string(rune('a'+i))
		var call toolgate.Call
		for attempt := 0; ; attempt++ {
			status, call, err = createCall(ctx, caller.URL, key, onNode2.SessionID(), map[string]any{"i": i}, 20*time.Second, true)
			if err == nil && status == http.StatusOK {
				break
			}
			if attempt == 5 || (err != nil && status != 0 && status < 500) {
				t.Fatalf("%s: call on %s after the cut: %d %v\nSDK warnings:\n%s\nnode 2 log:\n%s", key, caller.Name, status, err, logs, n2.LogTail(40))
			}
			t.Logf("%s: call on %s: %d %v; sending it again", key, caller.Name, status, err)
			time.Sleep(500 * time.Millisecond)
		}
		if call.Status != toolgate.StatusCompleted {
			t.Fatalf("%s: ended %s\nSDK warnings:\n%s", key, call.Status, logs)
		}
		wantEcho(t, call.Output, call.ID, "on-node2")
	}
	if lines := n2.LogLines("level=ERROR"); len(lines) > 0 {
		t.Logf("node 2 logged %d errors across the cut, e.g. %s", len(lines), lines[0])
	}
}
