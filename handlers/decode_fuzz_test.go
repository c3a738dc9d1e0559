package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/cputime"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// decodedRequest is one request body the handlers decode: a new value of
// its type, and whether unknown fields are refused and an empty body
// allowed, as its handler decodes it.
type decodedRequest struct {
	name               string
	newValue           func() any
	strict, mayBeEmpty bool
}

// requestBodies are the bodies the handlers decode with DecodeJSON, as
// they decode them (the anonymous bodies spelled as their handlers do).
var requestBodies = []decodedRequest{
	{"create session", func() any { return new(toolgate.CreateSessionRequest) }, true, true},
	{"register tools", func() any { return new(toolgate.RegisterToolsRequest) }, false, false},
	{"call", func() any { return new(toolgate.CallRequest) }, true, false},
	{"answer", func() any { return new(toolgate.Answer) }, false, false},
	{"progress", func() any { return new(toolgate.ProgressReport) }, false, false},
	{"run", func() any { return new(toolgate.RunRequest) }, true, false},
	{"stream open", func() any {
		return new(struct {
			Sessions []sessionEntry `json:"sessions"`
		})
	}, false, false},
	{"multi-session poll", func() any {
		return new(struct {
			Sessions []sessionEntry `json:"sessions"`
			WaitMS   *int64         `json:"wait_ms"`
		})
	}, false, false},
	{"stream join", func() any { return new(sessionEntry) }, false, false},
}

// decodeBudget is the CPU time one body of a few KB may cost to decode.
const decodeBudget = 100 * time.Millisecond

// FuzzDecodeRequest decodes any body as each request type its handler
// reads: it never panics, takes no longer than a moment, refuses with a
// *toolgate.Error whose status is 4xx, and a body it accepts re-encodes
// to JSON that decodes to the same value. The answers' two-step decoding
// (the envelope, then each answer) is checked the same way.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"client":{"name":"phone","platform":"ios"},"metadata":{"user":"ann"}}`,
		`{"type":"register_tools","replace":true,"tools":[{"name":"echo","description":"Echo","parameters":{"type":"object","properties":{"text":{"type":"string"}}},"timeout_ms":5000,"requires_approval":"always","rate_limit":{"requests_per_minute":2}}]}`,
		`{"session_id":"s1","tool":"echo","args":{"text":"hi"},"timeout_ms":1000,"wait":false}`,
		`{"type":"tool_result","id":"c1","success":true,"output":{"n":1}}`,
		`{"type":"tool_error","id":"c1","code":"AUTH_REQUIRED","error":"log in","details":{"url":"x"}}`,
		`{"type":"tool_results","results":[{"type":"tool_result","id":"a","output":1},{"id":"b","success":false},7]}`,
		`{"type":"progress","id":"c1","progress":{"done":3,"of":9}}`,
		`{"sessions":[{"session_id":"s1","token":"t","cursor":12},{"session_id":"s2","token":"u"}],"wait_ms":2500}`,
		`{"session_id":"s1","token":"t","cursor":-1}`,
		`{"session_id":"s1","input":"book a table","messages":[{"role":"user","content":"hi"}],"max_steps":3}`,
		// Hostile: not JSON, the wrong shapes, values past their type, two values.
		``, ` `, `null`, `[]`, `"text"`, `{`, `{"a":`, `{"client":{"name":1}}`, `{"timeout_ms":1e400}`,
		`{"timeout_ms":9223372036854775808}`, `{"wait_ms":-9223372036854775809}`, `{"cursor":1.5}`,
		`{"unknown":true}`, `{} {}`, `{"tools":[` + strings.Repeat(`[`, 2000) + `]}`,
		"{\"client\":{\"name\":\"\xff\xfe\"}}", `{"session_id":"\ud800"}`, `{"a":1,"a":2}`,
		`{"args":` + strings.Repeat(`{"a":`, 500) + `1` + strings.Repeat(`}`, 500) + `}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, req := range requestBodies {
			v := req.newValue()
			var err error
			spent := cputime.Spent(func() {
				r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
				err = DecodeJSON(r, v, req.strict, req.mayBeEmpty)
			})
			if spent > decodeBudget {
				t.Fatalf("%s: decoding %d bytes took %s of CPU", req.name, len(body), spent)
			}
			checkDecoded(t, req.name, body, v, err, req.strict)
		}
		// The answers' route: the envelope, then one answer or each of a batch.
		var envelope struct {
			Type    string            `json:"type"`
			Results []json.RawMessage `json:"results"`
		}
		if err := decodeBytes(body, &envelope, false); err != nil {
			checkDecoded(t, "answer envelope", body, &envelope, err, false)
			return
		}
		for _, raw := range envelope.Results {
			var answer toolgate.Answer
			checkDecoded(t, "batched answer", raw, &answer, decodeBytes(raw, &answer, false), false)
		}
	})
}

// checkDecoded checks one decoding: an error is a *toolgate.Error with a
// 4xx status; a body accepted is one valid JSON value (or blank, where
// allowed); a value decoded re-encodes, and that encoding decodes (with
// the same strictness) to a value that encodes the same again.
func checkDecoded(t *testing.T, name string, body []byte, v any, err error, strict bool) {
	t.Helper()
	if err != nil {
		var te *toolgate.Error
		if !errors.As(err, &te) {
			t.Fatalf("%s: %q refused with %T %v, not a *toolgate.Error", name, body, err, err)
		}
		if s := jsonhttp.StatusOf(te.Code); s < 400 || s > 499 {
			t.Fatalf("%s: %q refused with %s (%d), want a 4xx", name, body, te.Code, s)
		}
		if te.Message == "" {
			t.Fatalf("%s: %q refused without a message", name, body)
		}
		return
	}
	if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
		t.Fatalf("%s: %q accepted, but it is not one valid JSON value", name, body)
	}
	encoded, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %q decoded to %#v, which does not re-encode: %v", name, body, v, err)
	}
	again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	if err := decodeBytes(encoded, again, strict); err != nil {
		t.Fatalf("%s: %q decoded and re-encoded to %s, which does not decode: %v", name, body, encoded, err)
	}
	reencoded, err := json.Marshal(again)
	if err != nil || !bytes.Equal(encoded, reencoded) {
		t.Fatalf("%s: %q re-encoded to %s, then to %s (%v)", name, body, encoded, reencoded, err)
	}
}
