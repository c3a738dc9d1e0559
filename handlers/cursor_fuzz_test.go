package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
)

// newestSeq is the newest event of every session of FuzzCursorParams: a
// cursor past it is refused, as the engine refuses it.
const newestSeq = 10

// cursorRoute is a route of FuzzCursorParams that reads a cursor or a
// wait_ms.
type cursorRoute int

const (
	streamHeader    cursorRoute = iota // GET .../events, Last-Event-ID
	streamQuery                        // GET .../events?last_event_id=
	sessionPoll                        // GET .../poll?cursor=&wait_ms=
	callWait                           // GET /v1/calls/{id}?wait_ms=
	multiPoll                          // POST /v1/poll, cursor and wait_ms in the body
	multiStreamOpen                    // POST /v1/streams, cursor in the body
	cursorRoutes
)

// checkedCursors records, per session, the cursors the handlers passed to
// Delivery.CheckCursor, and the waits they passed to Calls.WaitCall.
type checkedCursors struct {
	mu      sync.Mutex
	cursors map[string][]int64
	waits   map[string][]time.Duration
}

func (c *checkedCursors) cursor(sid string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cursors[sid] = append(c.cursors[sid], n)
}

func (c *checkedCursors) wait(id string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits[id] = append(c.waits[id], d)
}

func (c *checkedCursors) of(key string) ([]int64, []time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursors[key], c.waits[key]
}

// FuzzCursorParams sends any cursor and wait_ms to each route that reads
// one — a stream's Last-Event-ID (header or query), a poll's ?cursor= and
// ?wait_ms=, a call's ?wait_ms=, a multi-session poll's or stream's body —
// through the real router over fakes. No input panics or gets a 5xx.
// What is not a whole number (or a JSON integer, in a body) is refused
// with 400 and never reaches the engine. A whole number reaches the
// engine's CheckCursor exactly as written before anything is read (the
// fake refuses, as the engine does, a negative one or one past the newest
// event); a wait_ms below zero is refused with 400; one past the cap waits
// the cap.
func FuzzCursorParams(f *testing.F) {
	for _, seed := range []struct{ cursor, wait string }{
		{"", ""}, {"0", "0"}, {"7", "1"}, {"10", "25000"}, {"11", "60001"}, {"-1", "-1"}, {"-0", "+5"},
		{"9223372036854775807", "9223372036854775807"}, {"9223372036854775808", "-9223372036854775808"},
		{"1e3", "1.5"}, {" 5", "5 "}, {"0x10", "0b1"}, {"٣", "①"}, {"5\x00", "\xff"}, {"null", "null"},
		{`"5"`, `"5"`}, {"[5]", "{}"}, {"5,\"x\":1", "1}"}, {"1" + strings.Repeat("0", 400), strings.Repeat("9", 30)},
	} {
		for route := range cursorRoutes {
			f.Add(uint8(route), seed.cursor, seed.wait)
		}
	}
	seen := &checkedCursors{cursors: map[string][]int64{}, waits: map[string][]time.Duration{}}
	const maxCallWait = time.Minute
	eng := fakeEngine{
		Auth: keys{},
		Delivery: &fakeDelivery{
			listen: func(string, bool) (toolgate.Listener, error) { return newFakeListener(), nil },
			listenFunc: func(string, bool, func()) (toolgate.Listener, error) {
				return newFakeListener(), nil
			},
			openEvents:  func(string) ([]toolgate.Event, int64, error) { return nil, newestSeq, nil },
			eventsAfter: func(_ string, cursor int64) ([]toolgate.Event, int64, error) { return nil, max(cursor, newestSeq), nil },
			checkCursor: func(sid string, cursor int64) error {
				seen.cursor(sid, cursor)
				if cursor < 0 || cursor > newestSeq {
					return toolgate.Errorf(toolgate.EBadRequest, "cursor %d is out of range", cursor)
				}
				return nil
			},
			delivered: func(string, []toolgate.Event) {},
		},
		Calls: &fakeCalls{wait: func(_ context.Context, id string, wait time.Duration) (*toolgate.Call, error) {
			seen.wait(id, wait)
			return &toolgate.Call{ID: id, Status: toolgate.StatusCompleted}, nil
		}},
	}
	// The server of newTestServer, which takes a *testing.T.
	opts := eng.options()
	opts.MaxBodyBytes, opts.PollWait, opts.MaxPollWait, opts.MaxCallWait = 1<<20, 0, time.Millisecond, maxCallWait
	api := handlers.New(opts)
	api.Start()
	ts := httptest.NewServer(api)
	f.Cleanup(func() {
		api.Close()
		ts.Close()
	})
	client := ts.Client()
	client.Timeout = 10 * time.Second
	var requests atomic.Int64

	f.Fuzz(func(t *testing.T, routeByte uint8, cursor, wait string) {
		route := cursorRoute(routeByte) % cursorRoutes
		sid := fmt.Sprintf("01a20b24-c8e2-79cb-b053-%012d", requests.Add(1)) // each request its own session (shaped as an id): its own record
		token := "token-" + sid
		var req *http.Request
		switch route {
		case streamHeader, streamQuery, sessionPoll:
			q := url.Values{}
			path := "/v1/sessions/" + sid + "/events"
			if route == sessionPoll {
				path = "/v1/sessions/" + sid + "/poll"
				q.Set("cursor", cursor)
				if wait != "" {
					q.Set("wait_ms", wait)
				}
			} else if route == streamQuery && cursor != "" {
				q.Set("last_event_id", cursor)
			}
			req, _ = http.NewRequest("GET", ts.URL+path+"?"+q.Encode(), nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if route == streamHeader {
				if !validHeaderValue(cursor) {
					return // no client can send it
				}
				req.Header.Set("Last-Event-ID", cursor)
			}
		case callWait:
			q := url.Values{}
			if wait != "" {
				q.Set("wait_ms", wait)
			}
			req, _ = http.NewRequest("GET", ts.URL+"/v1/calls/"+sid+"?"+q.Encode(), nil)
			req.Header.Set("Authorization", "Bearer "+agentKey)
		case multiPoll, multiStreamOpen:
			entry := fmt.Sprintf(`{"session_id":%q,"token":%q`, sid, token)
			if cursor != "" {
				entry += `,"cursor":` + cursor
			}
			body := `{"sessions":[` + entry + `}]`
			if route == multiPoll && wait != "" {
				body += `,"wait_ms":` + wait
			}
			body += "}"
			path := "/v1/poll"
			if route == multiStreamOpen {
				path = "/v1/streams"
			}
			req, _ = http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("route %d, cursor %q, wait_ms %q: %v", route, cursor, wait, err)
		}
		var reply []byte
		if route == streamHeader || route == streamQuery || route == multiStreamOpen {
			// A stream that opened stays open: its first bytes are enough.
			reply = make([]byte, 4096)
			n, _ := resp.Body.Read(reply)
			reply = reply[:n]
		} else {
			if reply, err = io.ReadAll(resp.Body); err != nil {
				t.Fatal(err)
			}
		}
		resp.Body.Close()
		checked, waited := seen.of(sid)
		want := expectedCursorOutcome(route, cursor, wait, maxCallWait)
		if resp.StatusCode != want.status {
			t.Fatalf("route %d, cursor %q, wait_ms %q: status %d, want %d: %s", route, cursor, wait, resp.StatusCode, want.status, reply)
		}
		if fmt.Sprint(checked) != fmt.Sprint(want.checked) {
			t.Fatalf("route %d, cursor %q, wait_ms %q: the engine checked cursors %v, want %v", route, cursor, wait, checked, want.checked)
		}
		if want.waited != nil && (len(waited) != 1 || waited[0] != *want.waited) {
			t.Fatalf("route %d, wait_ms %q: the engine was asked to wait %v, want %v", route, wait, waited, *want.waited)
		}
		if want.refused && !strings.Contains(string(reply), `"code":"BAD_REQUEST"`) {
			t.Fatalf("route %d, cursor %q: the out-of-range cursor was not refused in the reply: %s", route, cursor, reply)
		}
	})
}

// cursorOutcome is what a route must answer to a cursor and a wait_ms.
type cursorOutcome struct {
	status  int
	checked []int64        // the cursors the engine must have been asked to check
	waited  *time.Duration // the wait the engine must have been asked for
	refused bool           // the reply refuses the session with BAD_REQUEST (multi-session routes)
}

// expectedCursorOutcome is the rule FuzzCursorParams holds the handlers
// to, written without their code.
func expectedCursorOutcome(route cursorRoute, cursor, wait string, maxCallWait time.Duration) cursorOutcome {
	inRange := func(n int64) bool { return n >= 0 && n <= newestSeq }
	switch route {
	case streamHeader, streamQuery:
		if cursor == "" {
			return cursorOutcome{status: 200}
		}
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil {
			return cursorOutcome{status: 400}
		}
		if !inRange(n) {
			return cursorOutcome{status: 400, checked: []int64{n}}
		}
		return cursorOutcome{status: 200, checked: []int64{n}}
	case sessionPoll:
		if w, err := strconv.ParseInt(wait, 10, 64); wait != "" && (err != nil || w < 0) {
			return cursorOutcome{status: 400}
		}
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil {
			return cursorOutcome{status: 400}
		}
		if !inRange(n) {
			return cursorOutcome{status: 400, checked: []int64{n}}
		}
		return cursorOutcome{status: 200, checked: []int64{n}}
	case callWait:
		if wait == "" {
			zero := time.Duration(0)
			return cursorOutcome{status: 200, waited: &zero}
		}
		w, err := strconv.ParseInt(wait, 10, 64)
		if err != nil || w < 0 {
			return cursorOutcome{status: 400}
		}
		d := maxCallWait
		if w < maxCallWait.Milliseconds() {
			d = time.Duration(w) * time.Millisecond
		}
		return cursorOutcome{status: 200, waited: &d}
	}
	// The multi-session routes: the body as encoding/json reads it.
	entry := `{"session_id":"s","token":"t"`
	if cursor != "" {
		entry += `,"cursor":` + cursor
	}
	body := `{"sessions":[` + entry + `}]`
	if route == multiPoll && wait != "" {
		body += `,"wait_ms":` + wait
	}
	var parsed struct {
		Sessions []struct {
			SessionID string `json:"session_id"`
			Cursor    *int64 `json:"cursor"`
		} `json:"sessions"`
		WaitMS *int64 `json:"wait_ms"`
	}
	if json.Unmarshal([]byte(body+"}"), &parsed) != nil || len(parsed.Sessions) != 1 || parsed.Sessions[0].SessionID != "s" {
		return cursorOutcome{status: 400}
	}
	if parsed.WaitMS != nil && *parsed.WaitMS < 0 {
		return cursorOutcome{status: 400}
	}
	if parsed.Sessions[0].Cursor == nil {
		return cursorOutcome{status: 200}
	}
	n := *parsed.Sessions[0].Cursor
	return cursorOutcome{status: 200, checked: []int64{n}, refused: !inRange(n)}
}

// validHeaderValue reports whether a client can send v as a header value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return strings.TrimSpace(v) == v
}
