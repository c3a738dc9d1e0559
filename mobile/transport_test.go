package mobile_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// greeter is a ToolHandler answering "greet" and failing the other tools in
// the ways a handler can fail.
type greeter struct{}

func (greeter) Handle(callID, toolName, argsJSON string) (string, error) {
	switch toolName {
	case "greet":
		var args struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
			return "", err
		}
		return fmt.Sprintf(`{"greeting":"hello %s","call_id":%q}`, args.Name, callID), nil
	case "plain_text":
		return "just text", nil
	case "denied":
		return "", mobile.NewToolError(mobile.CodePermissionDenied, "contacts are off limits", `{"resolution_hint":"grant access in settings"}`)
	case "broken":
		return "", errors.New("disk on fire")
	case "panics":
		panic("handler bug")
	}
	return "", fmt.Errorf("greeter does not know %s", toolName)
}

func registerGreeterTools(t *testing.T, client *mobile.Client) {
	t.Helper()
	for _, name := range []string{"greet", "plain_text", "denied", "broken", "panics"} {
		if err := client.RegisterTool(name, "test tool "+name, `{"type":"object","properties":{"name":{"type":"string"}}}`); err != nil {
			t.Fatal(err)
		}
	}
	client.SetHandler(greeter{})
}

func testCallsAnswered(t *testing.T, transport string) {
	g := gatewaytest.Start(t)
	client, states := newTestClient(t, g, transport)
	registerGreeterTools(t, client)
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	states.waitFor(t, "connected "+transport, 10*time.Second)
	if got := client.Transport(); got != transport {
		t.Errorf("Transport() = %q, want %q", got, transport)
	}
	sid := client.SessionID()

	call := callTool(t, g, sid, "greet", `{"name":"Ada"}`)
	if call.Status != toolgate.StatusCompleted {
		t.Fatalf("greet: status %s, error %+v", call.Status, call.Error)
	}
	var out struct {
		Greeting string `json:"greeting"`
		CallID   string `json:"call_id"`
	}
	json.Unmarshal(call.Output, &out)
	if out.Greeting != "hello Ada" || out.CallID != call.ID {
		t.Errorf("greet output %s", call.Output)
	}

	if call := callTool(t, g, sid, "plain_text", `{}`); call.Status != toolgate.StatusCompleted || string(call.Output) != `"just text"` {
		t.Errorf("plain_text: %s %s", call.Status, call.Output)
	}

	failures := []struct{ tool, code, message, details string }{
		{"denied", "PERMISSION_DENIED", "contacts are off limits", `{"resolution_hint":"grant access in settings"}`},
		{"broken", "INTERNAL_ERROR", "disk on fire", ""},
		{"panics", "INTERNAL_ERROR", "the tool's handler panicked: handler bug", ""},
	}
	for _, f := range failures {
		call := callTool(t, g, sid, f.tool, `{}`)
		if call.Status != toolgate.StatusFailed || call.Error == nil {
			t.Errorf("%s: status %s, error %+v; want failed", f.tool, call.Status, call.Error)
			continue
		}
		if call.Error.Code != f.code || call.Error.Message != f.message {
			t.Errorf("%s: error %s %q, want %s %q", f.tool, call.Error.Code, call.Error.Message, f.code, f.message)
		}
		if f.details != "" && !jsonEqual(call.Error.Details, f.details) {
			t.Errorf("%s: details %s, want %s", f.tool, call.Error.Details, f.details)
		}
	}
	// Still answering after a panic.
	if call := callTool(t, g, sid, "greet", `{"name":"again"}`); call.Status != toolgate.StatusCompleted {
		t.Errorf("greet after a panic: %s", call.Status)
	}
}

// jsonEqual reports whether raw and want hold the same JSON value: equal
// after decoding, so key order and number spelling do not matter, types do.
func jsonEqual(raw []byte, want string) bool {
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// jsonEqual tells apart what prints alike: a number and a string of its
// digits, null and a missing key, and nested values.
func TestJSONEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[true,null]}`, `{"b":[true,null],"a":1.0}`, true},
		{`{"i":"1"}`, `{"i":1}`, false},
		{`{"i":null}`, `{}`, false},
		{`["a b"]`, `["a","b"]`, false},
		{`{"x":{"y":"1"}}`, `{"x":{"y":1}}`, false},
		{`{"x":`, `{"x":1}`, false},
	} {
		if got := jsonEqual([]byte(c.a), c.b); got != c.want {
			t.Errorf("jsonEqual(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestCallsAnsweredOverSSE(t *testing.T) { testCallsAnswered(t, mobile.TransportSSE) }

func TestCallsAnsweredOverLongPoll(t *testing.T) { testCallsAnswered(t, mobile.TransportPoll) }

// wrappedTransport stands for an app's own wrapper around the default
// transport (tracing, a proxy shim).
type wrappedTransport struct{ http.RoundTripper }

// TestWrappedDefaultTransport: an app that replaced http.DefaultTransport
// with a wrapper can still make a client, and it answers calls.
func TestWrappedDefaultTransport(t *testing.T) {
	g := gatewaytest.Start(t)
	saved := http.DefaultTransport
	http.DefaultTransport = wrappedTransport{saved}
	defer func() { http.DefaultTransport = saved }()
	client, states := newTestClient(t, g, mobile.TransportSSE)
	registerGreeterTools(t, client)
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	states.waitFor(t, "connected sse", 10*time.Second)
	if call := callTool(t, g, client.SessionID(), "greet", `{"name":"Ada"}`); call.Status != toolgate.StatusCompleted {
		t.Fatalf("greet: %s %+v", call.Status, call.Error)
	}
}
