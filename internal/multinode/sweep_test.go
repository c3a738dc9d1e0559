package multinode_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// The sweep runs on one node at a time, under a lease: when the node that
// created a call is killed before the call's deadline, another node ends
// the call timed_out; a session whose client vanished expires once (one
// close, one call_cancelled for its open call), whatever node sweeps.
func TestSweepUnderLease(t *testing.T) {
	// A session-ttl above the 5 s at which a node writes when its sessions
	// were last seen, so that a session polled on one node is not expired
	// by the sweep on another.
	c := startCluster(t, 3, "--sweep-interval", "200ms", "--session-grace", "2s", "--session-ttl", "8s")
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	t.Run("deadline", func(t *testing.T) {
		s := newSession(t, n1.URL)
		// The session is kept online by polls on node 3, so that only
		// the call's deadline can end it.
		keepOnline(ctx, n3.URL, s)
		status, call, err := createCall(ctx, n2.URL, "sweep-deadline", s.ID, map[string]any{}, 2*time.Second, false)
		if err != nil || status != http.StatusAccepted {
			t.Fatalf("create on node 2: %d %v", status, err)
		}
		n2.Kill() // with the call's deadline in its timers
		start := time.Now()
		for {
			status, got, err := readCall(ctx, n1.URL, call.ID, 5*time.Second)
			if err != nil || status != http.StatusOK {
				t.Fatalf("GET on node 1: %d %v", status, err)
			}
			if got.Status.Final() {
				if got.Status != toolgate.StatusTimedOut {
					t.Fatalf("call %s ended %s, want timed_out", call.ID, got.Status)
				}
				t.Logf("call %s ended timed_out %s after its node was killed (deadline 2s)", call.ID, time.Since(start).Round(time.Millisecond))
				break
			}
			if time.Since(start) > 45*time.Second {
				t.Fatalf("call %s still %s 45s after its node was killed; its deadline was 2s", call.ID, got.Status)
			}
		}
		n2.Restart(t)
	})

	t.Run("expiry", func(t *testing.T) {
		s := newSession(t, n1.URL)
		status, call, err := createCall(ctx, n1.URL, "sweep-expiry", s.ID, map[string]any{}, 60*time.Second, false)
		if err != nil || status != http.StatusAccepted {
			t.Fatalf("create: %d %v", status, err)
		}
		n1.Kill() // the node the client spoke to; its client vanished too
		start := time.Now()
		var got toolgate.Call
		for {
			status, got, err = readCall(ctx, n3.URL, call.ID, 2*time.Second)
			if err != nil || status != http.StatusOK {
				t.Fatalf("GET on node 3: %d %v", status, err)
			}
			if got.Status.Final() || time.Since(start) > 45*time.Second {
				break
			}
		}
		if got.Status != toolgate.StatusCancelled {
			t.Fatalf("the call of the vanished session is %s %s after its node was killed, want cancelled", got.Status, time.Since(start).Round(time.Millisecond))
		}
		// Let every node's sweep run a few more times: still one close.
		time.Sleep(time.Second)
		var reasons []string
		if err := c.DB.SelectContext(ctx, &reasons, `SELECT close_reason FROM sessions WHERE id = $1 AND closed_at IS NOT NULL`, s.ID); err != nil {
			t.Fatal(err)
		}
		if len(reasons) != 1 || reasons[0] != "expired" {
			t.Errorf("the session's close: %v, want expired", reasons)
		}
		cancels := c.queryInts(t, `SELECT count(*) FROM events WHERE session_id = $1 AND type = 'call_cancelled'`, s.ID)
		if cancels[0] != 1 {
			t.Errorf("%d call_cancelled events for the one open call of the expired session, want 1", cancels[0])
		}
		n1.Restart(t)
	})
}

// keepOnline long-polls the session on baseURL until ctx ends, as a
// client that is there but never answers.
func keepOnline(ctx context.Context, baseURL string, s session) {
	go func() {
		cursor := int64(-1)
		for ctx.Err() == nil {
			_, next, err := poll(ctx, baseURL, s, cursor, 2*time.Second)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			cursor = next
		}
	}()
}
