package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
)

// TestHTTPRequestInterruptedByKill: an http_request call in flight when
// the gateway is killed (SIGKILL) is not sent again blindly at the next
// start. A POST may have reached the server already, so it ends failed
// with INTERRUPTED and the server never sees it twice; a GET is safe to
// repeat and is sent again, and completes.
func TestHTTPRequestInterruptedByKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	var posts, gets atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := gets.Add(1)
		if r.Method == "POST" {
			n = posts.Add(1)
			gets.Add(-1)
		}
		if n == 1 { // the first of each is held until the gateway is killed
			// The body read first: the server notices a closed connection
			// (and ends the request's context) only once it is.
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return
		}
		w.Write([]byte("done"))
	}))
	defer target.Close()
	host := strings.TrimPrefix(target.URL, "http://")

	proc := gatewaytest.Start(t, "--agent-key", testAgentKey, "--http-allow", host)
	g := &gateway{t: t, URL: proc.URL, DBPath: proc.DBPath}
	noWait := false
	var post, get callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "http_request", "wait": &noWait,
		"args": map[string]any{"method": "POST", "url": target.URL + "/slow", "body": "order 1"}}, 202, &post)
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "http_request", "wait": &noWait,
		"args": map[string]any{"method": "GET", "url": target.URL + "/slow"}}, 202, &get)
	testwait.Until(t, 15*time.Second, "both requests to reach the target", func() bool { return posts.Load() == 1 && gets.Load() == 1 })

	proc.Restart(t) // killed with SIGKILL first

	var ended callRecord
	testwait.Until(t, 15*time.Second, "the interrupted POST to end", func() bool {
		g.call("GET", "/v1/calls/"+post.ID, testAgentKey, nil, 200, &ended)
		return ended.Status != "pending" && ended.Status != "delivered"
	})
	if ended.Status != "failed" || ended.Error == nil || ended.Error.Code != "INTERRUPTED" || !strings.Contains(ended.Error.Message, "not run again") {
		t.Fatalf("interrupted POST = %+v", ended)
	}
	testwait.Until(t, 15*time.Second, "the interrupted GET to be sent again and complete", func() bool {
		g.call("GET", "/v1/calls/"+get.ID, testAgentKey, nil, 200, &ended)
		return ended.Status == "completed"
	})
	if n := posts.Load(); n != 1 {
		t.Fatalf("the POST reached the target %d times", n)
	}
	if n := gets.Load(); n != 2 {
		t.Fatalf("the GET reached the target %d times, want 2 (once more after the restart)", n)
	}
}
