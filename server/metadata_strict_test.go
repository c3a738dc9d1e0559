package server_test

import (
	"strings"
	"testing"
)

// nested returns metadata {"a": [[…]]} nesting depth levels deep, the
// outer object counted.
func nested(depth int) string {
	return `{"metadata":{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}}`
}

// TestMetadataNestingIsBounded: metadata nested deeper than 32 levels is
// refused with 400 naming the limit, and nothing is stored; 32 levels
// pass. (Before, 1,500 levels in 3 KB were stored and shown in every page
// of GET /v1/sessions, which Python's json and Rust's serde_json cannot
// read.)
func TestMetadataNestingIsBounded(t *testing.T) {
	g := startGateway(t, nil)
	for _, depth := range []int{33, 200, 1500} {
		status, body := g.do("POST", "/v1/sessions", "", nested(depth))
		if status != 400 || errorCode(body) != "BAD_REQUEST" || !strings.Contains(string(body), "32 levels") {
			t.Errorf("metadata %d levels deep: %d %s, want 400 naming the 32 levels", depth, status, body)
		}
	}
	// Brackets inside strings are not nesting.
	g.call("POST", "/v1/sessions", "", `{"metadata":{"s":"`+strings.Repeat("[{", 100)+`"}}`, 201, nil)
	if n := openSessions(g); n != 1 {
		t.Fatalf("%d sessions open after refused creates and one good one, want 1", n)
	}
	g.call("POST", "/v1/sessions", "", nested(32), 201, nil)
}

// TestMetadataMemberNamedTwiceIsRefused: metadata naming a member twice in
// one object, at any depth and however spelled, is refused with 400
// naming the member (readers keep the first, the last or both: what the
// gateway checked would not be what every reader of GET /v1/sessions
// reads); the same name in different objects is fine.
func TestMetadataMemberNamedTwiceIsRefused(t *testing.T) {
	g := startGateway(t, nil)
	for _, md := range []string{`{"u":1,"u":2}`, `{"u":"` + testAgentKey + `","u":"x"}`, `{"p":{"u":"x","\u0075":1}}`, `{"x":[1,{"k":{},"k":[]}]}`} {
		status, body := g.do("POST", "/v1/sessions", "", `{"metadata":`+md+`}`)
		if status != 400 || errorCode(body) != "BAD_REQUEST" || !strings.Contains(string(body), "twice") {
			t.Errorf("metadata %s: %d %s, want 400 naming the member named twice", md, status, body)
		}
	}
	if n := openSessions(g); n != 0 {
		t.Fatalf("%d sessions open after refused creates, want 0", n)
	}
	g.call("POST", "/v1/sessions", "", `{"metadata":{"a":{"a":1},"b":[{"a":1},{"a":2}]}}`, 201, nil)
}
