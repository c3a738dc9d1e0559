package mobile

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestBuildToolSpec: the options become the spec's traits, and a tool the
// gateway would refuse is refused here with the gateway's message (the
// rules themselves are toolgate.CheckToolSpec's, tested at the root).
func TestBuildToolSpec(t *testing.T) {
	t.Parallel()
	bad := []struct {
		name, description, params string
		options                   *ToolOptions
		want                      string
	}{
		{"has space", "d", "", nil, `tool "has space": name must match ^[A-Za-z0-9_-]{1,64}$`},
		{"ok", "  ", "", nil, `tool "ok": description is required`},
		{"ok", "d", `{"type":"string"}`, nil, `tool "ok": parameters must have the top-level "type": "object"`},
		{"ok", "d", "", &ToolOptions{TimeoutMS: -1}, `tool "ok": timeout_ms must not be negative`},
		{"ok", "d", "", &ToolOptions{RequiresApproval: "sometimes"}, `tool "ok": requires_approval must be never, unless_auto_approved or always`},
		{"ok", "d", "", &ToolOptions{RequestsPerMinute: 5, RequestsPerHour: -1}, `tool "ok": rate_limit values must not be negative`},
	}
	for _, b := range bad {
		if _, err := buildToolSpec(b.name, b.description, b.params, b.options); err == nil || err.Error() != b.want {
			t.Errorf("buildToolSpec(%q, %q, %q, %+v) = %v, want %s", b.name, b.description, b.params, b.options, err, b.want)
		}
	}
	spec, err := buildToolSpec("camera_snap", "Take a photo", `{"type":"object","properties":{"flash":{"type":"boolean"}}}`,
		&ToolOptions{TimeoutMS: 60000, RequiresApproval: "always", RequestsPerMinute: 6, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(spec)
	want := `{"name":"camera_snap","description":"Take a photo","parameters":{"type":"object","properties":{"flash":{"type":"boolean"}}},"timeout_ms":60000,"requires_approval":"always","rate_limit":{"requests_per_minute":6},"read_only":true}`
	if string(b) != want {
		t.Errorf("spec on the wire:\n got %s\nwant %s", b, want)
	}
	// Options left at zero leave every trait to the gateway.
	spec, err = buildToolSpec("echo", "Echo", "", NewToolOptions())
	if b, _ := json.Marshal(spec); err != nil || string(b) != `{"name":"echo","description":"Echo"}` {
		t.Errorf("spec with default options: %s, %v", b, err)
	}
}

func TestOutputJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`{"a":1}`: `{"a":1}`, `42`: `42`, `hello`: `"hello"`, ``: `""`, `"quoted"`: `"quoted"`} {
		if got := string(outputJSON(in)); got != want {
			t.Errorf("outputJSON(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestAsToolErrorKeepsCodes(t *testing.T) {
	t.Parallel()
	wrapped := fmt.Errorf("reading contacts: %w", NewToolError(CodePermissionDenied, "no access", `{"scope":"contacts"}`))
	if te := asToolError(wrapped); te.Code != CodePermissionDenied || te.DetailsJSON != `{"scope":"contacts"}` {
		t.Errorf("wrapped tool error became %+v", te)
	}
	if te := asToolError(errors.New("disk full")); te.Code != CodeInternalError || te.Message != "disk full" {
		t.Errorf("plain error became %+v", te)
	}
	if d := NewToolError(CodeInvalidArgs, "x", "not json").details(); d != nil {
		t.Errorf("details that are not an object were sent: %s", d)
	}
}

func TestCallTableRunsACallOnce(t *testing.T) {
	t.Parallel()
	table := newCallTable(3)
	call := func(id string) *Call {
		return &Call{id: id, cancelled: make(chan struct{}), finished: make(chan struct{})}
	}
	first := call("a")
	if !table.admit(first) || table.admit(call("a")) {
		t.Fatal("the same call id was admitted twice")
	}
	if table.cancel("a", "timeout"); !first.Cancelled() || first.CancelReason() != "timeout" {
		t.Fatal("cancel did not reach the running call")
	}
	table.finish(first)
	if table.admit(call("a")) {
		t.Fatal("a finished call was admitted again")
	}
	// A cancellation that arrives before its request keeps the request out.
	table.cancel("b", "cancelled")
	if table.admit(call("b")) {
		t.Fatal("a call cancelled before it arrived was admitted")
	}
	// Past the limit the oldest ids are forgotten.
	for _, id := range []string{"c", "d", "e", "f"} {
		c := call(id)
		table.admit(c)
		table.finish(c)
	}
	if !table.admit(call("a")) {
		t.Error("the oldest id was not forgotten past the limit")
	}
}

func TestFileSessionStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nested", "session.json")
	store := NewFileSessionStore(path)
	if state, err := store.Load(); state != nil || err != nil {
		t.Fatalf("empty store loaded %+v, %v", state, err)
	}
	want := SessionState{GatewayURL: "http://127.0.0.1:1", SessionID: "s1", Token: "secret", Cursor: 42}
	if err := store.Save(&want); err != nil {
		t.Fatal(err)
	}
	got, err := NewFileSessionStore(path).Load()
	if err != nil || got == nil || *got != want {
		t.Fatalf("loaded %+v, %v; want %+v", got, err, want)
	}
	if err := store.Clear(); err != nil {
		t.Fatal(err)
	}
	if state, err := store.Load(); state != nil || err != nil {
		t.Fatalf("cleared store loaded %+v, %v", state, err)
	}
}
