package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// deepParameters is a parameters schema of properties nested depth times
// (2·depth+1 JSON levels): at depth 1,000 (37 KB) the schema compiler took
// seconds of CPU, at 4,000 (148 KB) minutes.
func deepParameters(depth int) string {
	return strings.Repeat(`{"type":"object","properties":{"p":`, depth) + `{"type":"object"}` + strings.Repeat(`}}`, depth)
}

// TestDeepSchemaIsRefusedBeforeCompiling: a registration whose parameters
// nest 1,000 properties deep, or are over 64 KiB, is rejected for it in
// tools_registered.rejected, and nothing was compiled; the tool beside
// them is registered. (Before the limits the deep one was compiled — 5 s
// of CPU — and accepted.)
func TestDeepSchemaIsRefusedBeforeCompiling(t *testing.T) {
	srv, _ := startServer(t, testConfig(t))
	e := srv.Engine
	ctx := context.Background()
	s, err := e.Sessions.CreateSession(ctx, toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Tools.RegisterTools(ctx, s.SessionID, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{
		{Name: "deep", Description: "nested 1,000 deep", Parameters: json.RawMessage(deepParameters(1000))},
		{Name: "huge", Description: "nested 4,000 deep", Parameters: json.RawMessage(deepParameters(4000))},
		{Name: "echo", Description: "fine", Parameters: json.RawMessage(textSchema)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Registered != 1 || len(res.Rejected) != 2 {
		t.Fatalf("registered %d, rejected %+v; want echo registered, deep and huge rejected", res.Registered, res.Rejected)
	}
	want := map[string]string{
		"deep": "parameters nests objects and arrays deeper than 64 levels",
		"huge": fmt.Sprintf("parameters is %d bytes; the limit is 65536", len(deepParameters(4000))),
	}
	for _, r := range res.Rejected {
		if r.Code != toolgate.EBadRequest || r.Message != want[r.Name] {
			t.Errorf("%s rejected %s %q, want BAD_REQUEST %q", r.Name, r.Code, r.Message, want[r.Name])
		}
	}
	if n := e.core.schemas.compiles.Load(); n != 1 {
		t.Errorf("%d schemas compiled, want 1 (echo's)", n)
	}
}

// TestToolCapIsAppliedBeforeCompiling: 10,000 tools, each with its own
// schema, listed to a session that may hold 256: the first 256 are
// registered, the others rejected CONFLICT, and no schema past the cap is
// compiled. (Before, all 10,000 were compiled first.)
func TestToolCapIsAppliedBeforeCompiling(t *testing.T) {
	srv, _ := startServer(t, testConfig(t))
	e := srv.Engine
	ctx := context.Background()
	s, err := e.Sessions.CreateSession(ctx, toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tools := make([]toolgate.ToolSpec, 10000)
	for i := range tools {
		tools[i] = toolgate.ToolSpec{Name: fmt.Sprintf("tool_%d", i), Description: "one of many",
			Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","title":"schema %d"}`, i))}
	}
	res, err := e.Tools.RegisterTools(ctx, s.SessionID, toolgate.RegisterToolsRequest{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if res.Registered != 256 || len(res.Rejected) != 10000-256 {
		t.Fatalf("registered %d, rejected %d; want 256 and %d", res.Registered, len(res.Rejected), 10000-256)
	}
	if r := res.Rejected[0]; r.Name != "tool_256" || r.Code != toolgate.EConflict || r.Message != "the session would hold more than 256 tools" {
		t.Errorf("first rejection %+v", r)
	}
	if n := e.core.schemas.compiles.Load(); n != 256 {
		t.Errorf("%d schemas compiled, want 256", n)
	}
}

// TestCompilesWaitForASlot: with every compile slot taken, a new schema's
// compile waits, and a registration whose client leaves meanwhile ends
// with the context's error, compiling and storing nothing; once a slot
// frees, the same registration goes through.
func TestCompilesWaitForASlot(t *testing.T) {
	srv, _ := startServer(t, testConfig(t))
	e := srv.Engine
	s, err := e.Sessions.CreateSession(context.Background(), toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if cap(e.core.schemas.slots) != compileSlots() {
		t.Fatalf("%d compile slots, want %d", cap(e.core.schemas.slots), compileSlots())
	}
	for range cap(e.core.schemas.slots) {
		e.core.schemas.slots <- struct{}{} // compiles that take long
	}
	req := toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{{Name: "echo", Description: "d", Parameters: json.RawMessage(textSchema)}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Tools.RegisterTools(ctx, s.SessionID, req)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a registration waiting for a slot, its client gone: %v, want context.Canceled", err)
	}
	if n := e.core.schemas.compiles.Load(); n != 0 {
		t.Errorf("%d schemas compiled while every slot was taken", n)
	}
	if tools, _ := e.Tools.ListTools(context.Background(), s.SessionID); len(tools) != 0 {
		t.Errorf("tools stored by a registration that ended: %v", tools)
	}
	<-e.core.schemas.slots
	if res, err := e.Tools.RegisterTools(context.Background(), s.SessionID, req); err != nil || res.Registered != 1 {
		t.Errorf("with a slot free: %+v %v", res, err)
	}
}

// TestStartUpCompilesNoStoredSchema: a database holding four tools whose
// schemas nest 1,000 deep (an older gateway took them), one whose schema
// does not compile and one that is fine. Open compiles nothing (before,
// it compiled every stored schema: 34.6 s with four such tools); each
// tool's schema is compiled on its first call. A call of a tool over the
// limits, or whose schema does not compile, fails with CONFLICT and a
// reason, every time, compiling it at most once.
func TestStartUpCompilesNoStoredSchema(t *testing.T) {
	cfg := testConfig(t)
	first, stop := startServer(t, cfg)
	sid := registerTool(t, first.Engine, "echo", textSchema)
	stop()

	st, err := store.Open(cfg.DBPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{"broken": `{"type":"object","properties":5}`}
	for i := range 4 {
		stored[fmt.Sprintf("deep_%d", i)] = deepParameters(1000)
	}
	err = st.Write(context.Background(), func(tx *store.Tx) error {
		for name, params := range stored {
			row := store.NewToolRow(sid, toolgate.ToolSpec{Name: name, Description: "stored long ago",
				Parameters: json.RawMessage(params), RequiresApproval: toolgate.ApprovalNever}, first.Engine.core.now())
			if err := tx.UpsertTool(&row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	again, _ := startServer(t, cfg)
	e := again.Engine
	if n := e.core.schemas.compiles.Load(); n != 0 {
		t.Fatalf("%d schemas compiled at start, want none", n)
	}
	if tools, _ := e.Tools.ListTools(context.Background(), sid); len(tools) != 6 {
		t.Errorf("%d tools loaded, want 6", len(tools))
	}
	call := func(tool, args string) error {
		_, err := e.Calls.CreateCall(context.Background(), toolgate.CallRequest{SessionID: sid, Tool: tool, Args: json.RawMessage(args)}, "")
		return err
	}
	for range 2 {
		err := call("deep_0", `{}`)
		if toolgate.ErrorCode(err) != toolgate.EConflict || !strings.Contains(toolgate.ErrorMessage(err), "nests objects and arrays deeper than 64 levels") {
			t.Errorf("a call of a stored tool over the limits: %v", err)
		}
		err = call("broken", `{}`)
		if toolgate.ErrorCode(err) != toolgate.EConflict || !strings.Contains(toolgate.ErrorMessage(err), "parameters is not a valid JSON Schema") {
			t.Errorf("a call of a stored tool whose schema does not compile: %v", err)
		}
	}
	if err := call("echo", `{"text":7}`); toolgate.ErrorCode(err) != toolgate.EInvalidArgs {
		t.Errorf("echo with text 7: %v, want INVALID_ARGS (its schema compiled on first use)", err)
	}
	if n := e.core.schemas.compiles.Load(); n != 2 {
		t.Errorf("%d schemas compiled, want 2 (broken once, echo once)", n)
	}
}
