package handlers_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
)

// The bounds of multi-session streams and polls: no stream held without a
// session that proved itself, a stream of no session ending, the token
// checks of one request bounded, and the write timeout over HTTP/2.

// TestMultiStreamAllRefused: a stream whose every session is refused is
// answered 200 with the ready event listing the refusals, then ends at
// once (rather than hold a connection without any credential).
func TestMultiStreamAllRefused(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			_, eng := newMultiSessions("s1", "s2")
			ts := newTestServer(t, eng, nil, tr.http2)
			resp := ts.do(t, request{method: "POST", path: "/v1/streams",
				body: `{"sessions":[{"session_id":"s1","token":"wrong"},{"session_id":"s2","token":"token-s1"}]}`})
			all, err := io.ReadAll(resp.Body) // the client gives up after 5 s
			if resp.StatusCode != 200 || err != nil {
				t.Fatalf("status %d, the stream did not end: %v (%q)", resp.StatusCode, err, all)
			}
			if !strings.HasSuffix(string(all), `,"heartbeat_ms":15000,"sessions":[],"refused":[`+
				`{"session_id":"s1","code":"UNAUTHENTICATED","message":"invalid session token"},`+
				`{"session_id":"s2","code":"UNAUTHENTICATED","message":"invalid session token"}]}`+"\n\n") {
				t.Errorf("the stream sent %q", all)
			}
		})
	}
}

// TestMultiStreamIdleEnd: a stream whose sessions have all left ends once
// it has carried none for a heartbeat; one whose session leaves and joins
// again at once (a tab's reload) goes on.
func TestMultiStreamIdleEnd(t *testing.T) {
	const heartbeat = 50 * time.Millisecond
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			m, eng := newMultiSessions("s1", "s2")
			ts := newTestServer(t, eng, func(o *handlers.Options) { o.Heartbeat = heartbeat }, tr.http2)
			open := func(sid string) (*bufio.Reader, string) {
				resp := ts.do(t, request{method: "POST", path: "/v1/streams", body: `{"sessions":[{"session_id":"` + sid + `","token":"token-` + sid + `"}]}`})
				body := bufio.NewReader(resp.Body)
				id := streamIDPattern.FindStringSubmatch(nextEvent(t, body))
				if id == nil {
					t.Fatal("no stream id in the ready event")
				}
				return body, id[1]
			}
			leave := func(id, sid string) {
				if status, _, reply := ts.call(t, request{method: "DELETE", path: "/v1/streams/" + id + "/sessions/" + sid, headers: asSession(sid)}); status != 204 {
					t.Fatalf("leave: %d %s", status, reply)
				}
			}

			// s2 leaves and joins again at once; 4 heartbeats later its stream still carries it.
			kept, keptID := open("s2")
			leave(keptID, "s2")
			if status, _, reply := ts.call(t, request{method: "POST", path: "/v1/streams/" + keptID + "/sessions", body: `{"session_id":"s2","token":"token-s2","cursor":0}`}); status != 200 {
				t.Fatalf("join again: %d %s", status, reply)
			}
			for _, want := range []string{note("session_left", "s2", "left"), note("session_joined", "s2", "")} {
				if got := nextEvent(t, kept); got != want {
					t.Fatalf("the stream sent %q, want %q", got, want)
				}
			}

			// s1 leaves for good: its stream ends.
			ended, endedID := open("s1")
			leave(endedID, "s1")
			if got := nextEvent(t, ended); got != note("session_left", "s1", "left") {
				t.Fatalf("the stream sent %q", got)
			}
			start := time.Now()
			for {
				frame, err := ended.ReadString('\n') // the client gives up after 5 s
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("the stream of no session did not end: %v", err)
				}
				if frame != "\n" && !strings.HasPrefix(frame, "event: ping") && !strings.HasPrefix(frame, `data: {"type":"ping"`) {
					t.Fatalf("the stream sent %q", frame)
				}
			}
			if waited := time.Since(start); waited < heartbeat*3/4 {
				t.Errorf("the stream ended %v after its last session left, before a heartbeat", waited)
			}

			time.Sleep(4 * heartbeat)
			m.append("s2", event(3, "tool_call_request", "c1"))
			if got := nextEvent(t, kept); got != sessionFrame("s2", 3, "tool_call_request", "c1") {
				t.Fatalf("the stream of a session that joined again sent %q", got)
			}
		})
	}
}

// nextEvent reads the next event of a stream but pings (a retry hint
// counts as one), whole with its closing blank line.
func nextEvent(t *testing.T, body *bufio.Reader) string {
	t.Helper()
	for {
		var ev strings.Builder
		for {
			line, err := body.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended or failed: %v (after %q)", err, ev.String()+line)
			}
			ev.WriteString(line)
			if line == "\n" {
				break
			}
		}
		if s := ev.String(); !strings.HasPrefix(s, "event: ping\n") && !strings.HasPrefix(s, "retry: ") {
			return s
		}
	}
}

// countingKeys is keys{} counting its session token checks.
type countingKeys struct {
	keys
	checks *atomic.Int64
}

func (k countingKeys) AuthorizeSession(ctx context.Context, sid, token string) error {
	k.checks.Add(1)
	return k.keys.AuthorizeSession(ctx, sid, token)
}

// TestMultiStopsAuthorizing: a stream open or a poll stops checking tokens
// after 8 refusals and refuses the rest unchecked, so 12 bogus tokens cost
// 8 token checks, not 12.
func TestMultiStopsAuthorizing(t *testing.T) {
	var entries []string
	for i := range 12 {
		entries = append(entries, fmt.Sprintf(`{"session_id":"b%d","token":"bogus"}`, i))
	}
	entries = append(entries, `{"session_id":"s1","token":"token-s1"}`)
	list := `"sessions":[` + strings.Join(entries, ",") + `]`
	unchecked := `"code":"UNAUTHENTICATED","message":"not checked: 8 sessions of this request were refused, so the gateway stopped authorizing the rest"}`
	for _, path := range []string{"/v1/streams", "/v1/poll"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			_, eng := newMultiSessions("s1")
			checks := &atomic.Int64{}
			eng.Auth = countingKeys{checks: checks}
			ts := newTestServer(t, eng, nil, false)
			resp := ts.do(t, request{method: "POST", path: path, body: `{` + list + `,"wait_ms":0}`})
			// The poll's reply, or the stream's ready event (the stream then
			// ends: it carries no session).
			all, err := io.ReadAll(resp.Body)
			head := string(all)
			if resp.StatusCode != 200 || err != nil {
				t.Fatalf("status %d: %s %v", resp.StatusCode, head, err)
			}
			if n := checks.Load(); n != 8 {
				t.Errorf("%d token checks, want 8", n)
			}
			if got := strings.Count(head, `"message":"invalid session token"`); got != 8 {
				t.Errorf("%d sessions refused after a check, want 8: %s", got, head)
			}
			for _, sid := range []string{"b8", "b11", "s1"} {
				if !strings.Contains(head, `{"session_id":"`+sid+`",`+unchecked) {
					t.Errorf("%s is not refused unchecked: %s", sid, head)
				}
			}
		})
	}
}

// TestStreamWriteTimeoutHTTP2: over HTTP/2, a stream whose client stops
// reading (its flow-control window stays full) is cut off after the write
// timeout, as over HTTP/1.1, and its sessions' listeners are closed; a
// client that reads keeps its idle stream well past the timeout.
func TestStreamWriteTimeoutHTTP2(t *testing.T) {
	const timeout = 200 * time.Millisecond
	m, eng := newMultiSessions("s1", "s2")
	ts := newTestServer(t, eng, func(o *handlers.Options) { o.StreamWriteTimeout = timeout; o.Heartbeat = time.Hour }, true)
	// A client that grants each stream 16 KB and, for s1, never reads past the ready event.
	transport := ts.Client().Transport.(*http.Transport).Clone()
	transport.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: 16 << 10}
	client := &http.Client{Transport: transport}
	open := func(sid string) (*http.Response, *bufio.Reader) {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/streams", strings.NewReader(`{"sessions":[{"session_id":"`+sid+`","token":"token-`+sid+`"}]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.ProtoMajor != 2 {
			t.Fatalf("the stream is served over %s", resp.Proto)
		}
		body := bufio.NewReader(resp.Body)
		nextEvent(t, body) // ready
		return resp, body
	}
	open("s1")
	_, reading := open("s2")

	// s1's client does not read: a 1 MB event fills its window.
	big := toolgate.Event{Seq: 3, Type: "tool_call_request", Data: []byte(`{"type":"tool_call_request","id":"c1","pad":"` + strings.Repeat("x", 1<<20) + `"}`)}
	start := time.Now()
	m.append("s1", big)
	waitClosed(t, m.listener("s1"))
	if took := time.Since(start); took < timeout {
		t.Errorf("the stream was cut after %v, before the write timeout", took)
	}

	// s2's client reads: idle for 3 timeouts, its stream still delivers.
	time.Sleep(3 * timeout)
	m.append("s2", event(4, "tool_call_request", "c2"))
	if got := nextEvent(t, reading); got != sessionFrame("s2", 4, "tool_call_request", "c2") {
		t.Fatalf("the idle stream sent %q", got)
	}
}
