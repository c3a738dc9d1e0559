package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
)

// textSchema is the parameters of the tools these tests register.
const textSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

// registerTool registers one tool with the given parameters in a new
// session of e and returns the session's id.
func registerTool(t *testing.T, e *Engine, name, parameters string) string {
	t.Helper()
	return newSessionWithTool(t, e, toolgate.ToolSpec{Name: name, Description: "a test tool", Parameters: json.RawMessage(parameters)})
}

// cacheSize is the number of entries of c, collected or not.
func cacheSize(c *schemaCache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.schemas)
}

// toolSchema returns the compiled schema of a session's tool (compiling
// it, as its first call would, when it was loaded at start).
func toolSchema(t *testing.T, e *Engine, sessionID, name string) *jsonschema.Schema {
	t.Helper()
	var tool *toolEntry
	e.core.sessions.with(sessionID, func(s *sessionState) { tool = s.tools[name] })
	if tool == nil {
		t.Fatalf("session %s has no tool %s", sessionID, name)
	}
	sch, err := tool.argsSchema(context.Background())
	if err != nil {
		t.Fatalf("session %s, tool %s: %v", sessionID, name, err)
	}
	return sch
}

// TestToolsWithTheSameParametersShareOneSchema registers one schema in two
// sessions (once spaced differently: registration compacts it) and another
// in a third: the first two share one compiled schema, and each still
// checks the arguments of a call.
func TestToolsWithTheSameParametersShareOneSchema(t *testing.T) {
	srv, _ := startServer(t, testConfig(t))
	e := srv.Engine
	a := registerTool(t, e, "echo", textSchema)
	b := registerTool(t, e, "echo", `{ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }`)
	c := registerTool(t, e, "echo", `{"type":"object","properties":{"n":{"type":"integer"}}}`)
	if toolSchema(t, e, a, "echo") != toolSchema(t, e, b, "echo") {
		t.Error("two tools with the same parameters have two compiled schemas")
	}
	if toolSchema(t, e, a, "echo") == toolSchema(t, e, c, "echo") {
		t.Error("tools with different parameters share a schema")
	}
	ctx := context.Background()
	for _, sid := range []string{a, b} {
		_, err := e.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: sid, Tool: "echo", Args: json.RawMessage(`{"text":7}`)}, "")
		if toolgate.ErrorCode(err) != toolgate.EInvalidArgs {
			t.Errorf("session %s: a call with text 7 gave %v, want %s", sid, err, toolgate.EInvalidArgs)
		}
	}
	if _, err := e.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: c, Tool: "echo", Args: json.RawMessage(`{"text":"a","n":"x"}`)}, ""); toolgate.ErrorCode(err) != toolgate.EInvalidArgs {
		t.Errorf("the third tool took n=\"x\" (with a text, which its schema does not ask for): %v", err)
	}
}

// TestLoadedToolsShareOneSchema restarts a gateway whose sessions offer
// the same tool: the tools it loads at start share one compiled schema,
// compiled once, on first use.
func TestLoadedToolsShareOneSchema(t *testing.T) {
	cfg := testConfig(t)
	first, stop := startServer(t, cfg)
	var sessions []string
	for range 3 {
		sessions = append(sessions, registerTool(t, first.Engine, "echo", textSchema))
	}
	stop()

	again, _ := startServer(t, cfg)
	if n := again.Engine.core.schemas.compiles.Load(); n != 0 {
		t.Errorf("%d schemas compiled at start, want none", n)
	}
	shared := toolSchema(t, again.Engine, sessions[0], "echo")
	for _, sid := range sessions[1:] {
		if toolSchema(t, again.Engine, sid, "echo") != shared {
			t.Errorf("session %s's tool was compiled again", sid)
		}
	}
	if n := again.Engine.core.schemas.compiles.Load(); n != 1 {
		t.Errorf("%d schemas compiled, want 1", n)
	}
}

// TestSchemaCacheForgetsUnusedSchemas: a schema is compiled once while it
// is used, a malformed one is refused each time and never kept, and an
// entry goes once no one holds its schema.
func TestSchemaCacheForgetsUnusedSchemas(t *testing.T) {
	c := newSchemaCache()
	first, err := c.compile(context.Background(), json.RawMessage(textSchema))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.compile(context.Background(), json.RawMessage(textSchema)); again != first {
		t.Error("the same parameters compiled twice")
	}
	for range 2 {
		if _, err := c.compile(context.Background(), json.RawMessage(`{"type":"string"}`)); err == nil {
			t.Error("a schema whose type is not object was taken")
		}
	}
	if n := cacheSize(c); n != 1 {
		t.Errorf("%d entries, want 1 (refused schemas are not kept)", n)
	}
	runtime.KeepAlive(first)
	first = nil
	testwait.Until(t, 10*time.Second, "no entries after the schema's last holder let go", func() bool {
		runtime.GC()
		return cacheSize(c) == 0
	})
}

// TestSchemaCacheKeepsANewerEntry: the cleanup of a collected schema
// removes its key only while the key still holds that schema, not a
// schema compiled again for the same parameters since.
func TestSchemaCacheKeepsANewerEntry(t *testing.T) {
	c := newSchemaCache()
	current, err := c.compile(context.Background(), json.RawMessage(textSchema))
	if err != nil {
		t.Fatal(err)
	}
	key := sha256.Sum256([]byte(textSchema))
	collected := new(jsonschema.Schema) // stands for the schema the key held before
	c.forget(cacheEntry{key, weak.Make(collected)})
	if got := c.lookup(key); got != current {
		t.Fatalf("the cleanup of an older schema removed the current one (lookup gave %p, want %p)", got, current)
	}
	c.forget(cacheEntry{key, weak.Make(current)})
	if cacheSize(c) != 0 {
		t.Error("the cleanup of the current schema left its entry")
	}
}
