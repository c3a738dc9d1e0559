package handlers_test

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/clientaddr"
)

// countingSessions is a Sessions fake that counts the sessions it creates.
func countingSessions(n *atomic.Int32) fakeEngine {
	return fakeEngine{Sessions: &fakeSessions{create: func(toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error) {
		n.Add(1)
		return created, nil
	}}}
}

// sessionLimitServer serves a fake that counts the sessions it creates,
// with the session limit (burst 3, a token every 100 s: none comes back
// during a test) and trusted proxies given.
func sessionLimitServer(t *testing.T, trusted ...string) (*testServer, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	prefixes, err := clientaddr.ParseTrustedProxies(trusted)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, countingSessions(&n), func(o *handlers.Options) {
		o.SessionLimit = handlers.SessionLimit{PerSecond: 0.01, Burst: 3, TrustedProxies: prefixes}
	}, false)
	return ts, &n
}

// createSession posts a session with the client key (unless headers name
// another) and returns the status, Retry-After and body.
func createSession(t *testing.T, ts *testServer, headers map[string]string) (int, string, string) {
	t.Helper()
	headers = with(map[string]string{"Authorization": "Bearer " + clientKey}, headers)
	status, header, body := ts.call(t, request{method: "POST", path: "/v1/sessions", headers: headers, body: "{}"})
	return status, header.Get("Retry-After"), body
}

// errorCodeOf returns the code of an error reply's body.
func errorCodeOf(body string) string {
	var e toolgate.ErrorBody
	_ = json.Unmarshal([]byte(body), &e)
	return e.Error.Code
}

// TestSessionCreationLimit: one address creates its burst of sessions,
// then is refused 429 RATE_LIMITED with the seconds until its next token
// in Retry-After, and nothing is created.
func TestSessionCreationLimit(t *testing.T) {
	ts, created := sessionLimitServer(t)
	for i := range 3 {
		if status, _, body := createSession(t, ts, nil); status != 201 {
			t.Fatalf("session %d of the burst: %d %s", i+1, status, body)
		}
	}
	status, retry, body := createSession(t, ts, nil)
	if status != 429 || retry != "100" {
		t.Fatalf("over the burst: %d, Retry-After %q, %s; want 429 with 100", status, retry, body)
	}
	if code := errorCodeOf(body); code != toolgate.ERateLimited {
		t.Fatalf("over the burst: code %q, want RATE_LIMITED", code)
	}
	if n := created.Load(); n != 3 {
		t.Fatalf("sessions created: %d, want 3", n)
	}
}

// TestSessionLimitIgnoresSpoofedForwardedFor: from a peer that is not a
// trusted proxy, X-Forwarded-For is not believed: a new address in it
// every time does not get anyone a fresh bucket.
func TestSessionLimitIgnoresSpoofedForwardedFor(t *testing.T) {
	for _, trusted := range [][]string{nil, {"10.0.0.0/8"}} {
		ts, created := sessionLimitServer(t, trusted...)
		refused := 0
		for i := range 10 {
			status, _, _ := createSession(t, ts, map[string]string{"X-Forwarded-For": "203.0.113." + strconv.Itoa(i)})
			if status == 429 {
				refused++
			}
		}
		if refused != 7 || created.Load() != 3 {
			t.Fatalf("trusted %v, spoofed X-Forwarded-For: %d created, %d refused; want 3 and 7", trusted, created.Load(), refused)
		}
	}
}

// TestSessionLimitBehindTrustedProxy: behind a trusted proxy (the test's
// peer, 127.0.0.1) each client named by X-Forwarded-For has its own
// bucket; what the client itself wrote left of its address is not
// believed.
func TestSessionLimitBehindTrustedProxy(t *testing.T) {
	ts, created := sessionLimitServer(t, "127.0.0.1", "10.0.0.0/8")
	for _, client := range []string{"198.51.100.1", "198.51.100.2"} {
		for i := range 3 {
			// The client claims a new address each time (left), the proxies
			// append what they saw (the client, then an inner proxy).
			xff := "192.0.2." + strconv.Itoa(i) + ", " + client + ", 10.1.2.3"
			if status, _, body := createSession(t, ts, map[string]string{"X-Forwarded-For": xff}); status != 201 {
				t.Fatalf("client %s, session %d: %d %s", client, i+1, status, body)
			}
		}
		if status, _, _ := createSession(t, ts, map[string]string{"X-Forwarded-For": "192.0.2.99, " + client}); status != 429 {
			t.Fatalf("client %s over its burst: %d, want 429", client, status)
		}
	}
	if n := created.Load(); n != 6 {
		t.Fatalf("sessions created: %d, want 6", n)
	}
}

// TestSessionLimitSparesTheAgentKey: the operator's own key creates
// sessions without limit and without using the address's bucket; the
// zero SessionLimit limits nothing.
func TestSessionLimitSparesTheAgentKey(t *testing.T) {
	ts, _ := sessionLimitServer(t)
	for i := range 10 {
		if status, _, body := createSession(t, ts, asAgent); status != 201 {
			t.Fatalf("agent key, session %d: %d %s", i+1, status, body)
		}
	}
	if status, _, _ := createSession(t, ts, nil); status != 201 {
		t.Fatalf("the agent key's sessions used the address's bucket: %d", status)
	}

	var n atomic.Int32
	open := newTestServer(t, countingSessions(&n), nil, false)
	for i := range 50 {
		if status, _, body := createSession(t, open, nil); status != 201 {
			t.Fatalf("no limit, session %d: %d %s", i+1, status, body)
		}
	}
}
