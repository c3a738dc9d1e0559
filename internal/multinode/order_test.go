package multinode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// streamEvent is one event read from an SSE stream.
type streamEvent struct {
	Cursor int64 // the id: line; -1 when none
	Type   string
	CallID string
}

// openStream opens the session's SSE stream on baseURL without a cursor
// and sends its events on the returned channel until ctx ends; it returns
// once the stream's ready event came.
func openStream(t *testing.T, ctx context.Context, baseURL string, s session) <-chan streamEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/v1/sessions/"+s.ID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("stream on %s: %v", baseURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("stream on %s: status %d", baseURL, resp.StatusCode)
	}
	events := make(chan streamEvent, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		e := streamEvent{Cursor: -1}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				e.Cursor, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			case strings.HasPrefix(line, "data: "):
				var d struct {
					Type string `json:"type"`
					ID   string `json:"id"`
				}
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d)
				e.Type, e.CallID = d.Type, d.ID
			case line == "" && e.Type != "":
				events <- e
				e = streamEvent{Cursor: -1}
			}
		}
	}()
	select {
	case e, ok := <-events:
		if !ok || e.Type != toolgate.EventReady {
			t.Fatalf("stream on %s: first event %+v, want ready", baseURL, e)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("stream on %s: no ready event in 10s", baseURL)
	}
	return events
}

// Calls made at once on all three nodes for one session reach its client
// in one order: a long-poll on node 1 and a stream on node 2 each see
// every request exactly once, with cursors strictly increasing, and none
// skipped: the cursors seen are the session's events in the database, a
// counter of the session's own that goes up by one.
func TestSessionOrderAcrossNodes(t *testing.T) {
	c := startCluster(t, 3)
	s := newSession(t, c.Nodes[0].URL)
	const callsPerNode = 30
	const total = 3 * callsPerNode
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream := openStream(t, ctx, c.Nodes[1].URL, s)
	_, cursor, err := poll(ctx, c.Nodes[0].URL, s, -1, 0)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, nd := range c.Nodes {
		for i := range callsPerNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				key := fmt.Sprintf("order-%s-%d", nd.Name, i)
				status, _, err := createCall(ctx, nd.URL, key, s.ID, map[string]any{"i": i}, 50*time.Second, false)
				if err != nil || status != http.StatusAccepted {
					t.Errorf("%s: create on %s: %d %v", key, nd.Name, status, err)
				}
			}()
		}
	}
	close(start)

	// The long-poll on node 1, from the cursor it was given.
	var polled []polledEvent
	for len(polled) < total && ctx.Err() == nil {
		events, next, err := poll(ctx, c.Nodes[0].URL, s, cursor, 5*time.Second)
		if err != nil {
			t.Fatalf("poll after cursor %d: %v (%d requests so far)", cursor, err, len(polled))
		}
		polled = append(polled, events...)
		cursor = next
	}
	wg.Wait()
	// The stream on node 2.
	var streamed []streamEvent
	for len(streamed) < total {
		select {
		case e, ok := <-stream:
			if !ok {
				t.Fatalf("the stream on node 2 ended after %d requests", len(streamed))
			}
			if e.Type != toolgate.EventPing {
				streamed = append(streamed, e)
			}
		case <-ctx.Done():
			t.Fatalf("the stream on node 2 had %d requests of %d", len(streamed), total)
		}
	}

	stored := c.queryInts(t, `SELECT seq FROM events WHERE session_id = $1 ORDER BY seq`, s.ID)
	if len(stored) != total {
		t.Fatalf("%d events stored for the session, want %d", len(stored), total)
	}
	for i := 1; i < len(stored); i++ {
		if stored[i] != stored[i-1]+1 {
			t.Errorf("stored cursors %d then %d: the session's counter skipped", stored[i-1], stored[i])
		}
	}
	check := func(where string, seqs []int64, ids []string, types []string) {
		seen := map[string]bool{}
		for i := range seqs {
			if types[i] != toolgate.EventToolCallRequest {
				t.Errorf("%s: event %d is %s", where, seqs[i], types[i])
			}
			if seen[ids[i]] {
				t.Errorf("%s: call %s sent twice", where, ids[i])
			}
			seen[ids[i]] = true
			if i > 0 && seqs[i] <= seqs[i-1] {
				t.Errorf("%s: cursor %d after %d", where, seqs[i], seqs[i-1])
			}
		}
		if len(seqs) != len(stored) {
			t.Fatalf("%s: %d events, %d stored", where, len(seqs), len(stored))
		}
		for i := range seqs {
			if seqs[i] != stored[i] {
				t.Fatalf("%s: cursors %v, stored %v", where, seqs, stored)
			}
		}
	}
	var seqs []int64
	var ids, types []string
	for _, e := range polled {
		seqs, ids, types = append(seqs, e.Seq), append(ids, e.ID), append(types, e.Type)
	}
	check("long-poll on node 1", seqs, ids, types)
	seqs, ids, types = nil, nil, nil
	for _, e := range streamed {
		seqs, ids, types = append(seqs, e.Cursor), append(ids, e.CallID), append(types, e.Type)
	}
	check("stream on node 2", seqs, ids, types)
	if cursor != stored[len(stored)-1] {
		t.Errorf("the poll's cursor is %d, the newest event %d", cursor, stored[len(stored)-1])
	}
}
