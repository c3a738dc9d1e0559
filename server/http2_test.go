package server_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStreamOverHTTP2: where the connection cannot be taken over (HTTP/2),
// a stream is served from its request's goroutine, with the same events.
func TestStreamOverHTTP2(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("h2")
	g.register(s, echoTool)
	ts := httptest.NewUnstartedServer(g.Server.Handler())
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("proto %s, content type %q", resp.Proto, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitFor := func(prefix string) string {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stream ended before %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("no %q within 10s", prefix)
			}
		}
	}
	waitFor("event: ready")
	rec := g.startCall(s, "echo", map[string]any{"text": "over h2"}, 0)
	if l := waitFor("data: {\"type\":\"tool_call_request\""); !strings.Contains(l, rec.ID) {
		t.Fatalf("request line %s", l)
	}
	g.answer(s, rec.ID, "done")
	if got := g.waitCall(rec.ID); got.Status != "completed" {
		t.Fatalf("call = %+v", got)
	}
}
