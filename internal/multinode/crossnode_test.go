package multinode_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mobile"
)

// A call crosses the three nodes: the client's stream (or long-poll) is
// on node 1, the caller posts the call on node 2 and waits there, and the
// client's answer goes through node 3. The caller on node 2 gets the
// answer. Node 2 learns of the answer only from the database (node 3
// committed it), and node 1 of the call only from node 2's commit.
func TestCallAcrossThreeNodes(t *testing.T) {
	c := startCluster(t, 3)
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	for _, transport := range []string{mobile.TransportSSE, mobile.TransportPoll} {
		t.Run("sdk-"+transport, func(t *testing.T) {
			l := newLedger()
			via, answered := answersElsewhere(t, n1.URL, n3.URL)
			client, logs := connectSDK(t, via, "client-"+transport, transport, l)
			for i := range 5 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				status, call, err := createCall(ctx, n2.URL, "", client.SessionID(), map[string]any{"i": i}, 20*time.Second, true)
				cancel()
				if err != nil || status != http.StatusOK {
					t.Fatalf("call %d on node 2: %d %v\nSDK warnings:\n%s", i, status, err, logs)
				}
				if call.Status != toolgate.StatusCompleted {
					t.Fatalf("call %d (%s) ended %s, want completed\nSDK warnings:\n%s", i, call.ID, call.Status, logs)
				}
				wantEcho(t, call.Output, call.ID, "client-"+transport)
				if runs := l.executions(call.ID); len(runs) != 1 {
					t.Errorf("call %s ran %d times", call.ID, len(runs))
				}
			}
			if answered.Load() < 5 {
				t.Errorf("%d answers went through node 3, want 5", answered.Load())
			}
		})
	}
	// By hand: the client long-polls node 1, the caller waits on node 2,
	// the answer is posted to node 3 with the session token.
	t.Run("by-hand", func(t *testing.T) {
		s := newSession(t, n1.URL)
		done := make(chan callReply, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			status, call, err := createCall(ctx, n2.URL, "", s.ID, map[string]any{}, 20*time.Second, true)
			done <- callReply{status, call, err}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var request polledEvent
		for cursor := int64(-1); request.ID == ""; {
			select {
			case r := <-done:
				t.Fatalf("the caller on node 2 returned before the call was answered: %d %s %v", r.status, r.call.Status, r.err)
			default:
			}
			events, next, err := poll(ctx, n1.URL, s, cursor, time.Second)
			if err != nil {
				t.Fatalf("poll on node 1: %v", err)
			}
			cursor = next
			for _, e := range events {
				if e.Type == toolgate.EventToolCallRequest {
					request = e
				}
			}
		}
		status, reply, err := answer(ctx, n3.URL, s, request.ID, echoOutput{Call: request.ID, By: "by-hand"})
		if err != nil || status != http.StatusOK || reply.Status != "completed" || reply.Duplicate {
			t.Fatalf("answer on node 3: %d %+v %v", status, reply, err)
		}
		r := <-done
		if r.err != nil || r.status != http.StatusOK || r.call.Status != toolgate.StatusCompleted {
			t.Fatalf("the caller on node 2: %d %s %v", r.status, r.call.Status, r.err)
		}
		wantEcho(t, r.call.Output, request.ID, "by-hand")
	})
}

// The same call answered on the three nodes at once: exactly one answer
// wins (200, not a duplicate); the others are told the call had already
// ended (200 "duplicate": true with the stored status, or 409
// CALL_CLOSED); the stored output is the winner's, on every node.
func TestOneAnswerWins(t *testing.T) {
	c := startCluster(t, 3)
	s := newSession(t, c.Nodes[0].URL)
	for round := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		status, call, err := createCall(ctx, c.Nodes[round%3].URL, "", s.ID, map[string]any{"round": round}, 20*time.Second, false)
		if err != nil || status != http.StatusAccepted {
			t.Fatalf("round %d: create: %d %v", round, status, err)
		}
		var wg sync.WaitGroup
		replies := make([]answerReply, len(c.Nodes))
		statuses := make([]int, len(c.Nodes))
		start := make(chan struct{})
		for i, nd := range c.Nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var err error
				statuses[i], replies[i], err = answer(ctx, nd.URL, s, call.ID, echoOutput{Call: call.ID, By: nd.Name})
				if err != nil {
					t.Errorf("round %d: answer on %s: %v", round, nd.Name, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		winner := ""
		for i, nd := range c.Nodes {
			switch {
			case statuses[i] == http.StatusOK && !replies[i].Duplicate && replies[i].Status == "completed":
				if winner != "" {
					t.Errorf("round %d: call %s: both %s and %s won", round, call.ID, winner, nd.Name)
				}
				winner = nd.Name
			case statuses[i] == http.StatusOK && replies[i].Duplicate && replies[i].Status == "completed":
			case statuses[i] == http.StatusConflict && replies[i].Error.Code == "CALL_CLOSED":
			default:
				t.Errorf("round %d: answer on %s: %d %+v", round, nd.Name, statuses[i], replies[i])
			}
		}
		if winner == "" {
			t.Fatalf("round %d: call %s: no answer won: %v %+v", round, call.ID, statuses, replies)
		}
		for _, nd := range c.Nodes {
			status, got, err := readCall(ctx, nd.URL, call.ID, 0)
			if err != nil || status != http.StatusOK || got.Status != toolgate.StatusCompleted {
				t.Fatalf("round %d: GET on %s: %d %s %v", round, nd.Name, status, got.Status, err)
			}
			wantEcho(t, got.Output, call.ID, winner)
		}
		var stored []string
		if err := c.DB.SelectContext(ctx, &stored, `SELECT output FROM calls WHERE id = $1`, call.ID); err != nil || len(stored) != 1 {
			t.Fatalf("round %d: the stored call: %v %v", round, stored, err)
		}
		wantEcho(t, []byte(stored[0]), call.ID, winner)
		cancel()
		if t.Failed() {
			t.Fatalf("round %d failed (%s)", round, fmt.Sprint(statuses))
		}
	}
}
