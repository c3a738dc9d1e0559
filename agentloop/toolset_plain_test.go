package agentloop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// plainSet is a tool set without a prefix (as a sandbox directory is)
// whose tools the test sets.
type plainSet struct {
	kind  string
	tools []toolgate.Tool
}

func (s *plainSet) Prefix() string              { return "" }
func (s *plainSet) Source() toolgate.ToolSource { return toolgate.ToolSource{Kind: s.kind} }
func (s *plainSet) Tools() []toolgate.Tool      { return s.tools }
func (s *plainSet) Online() bool                { return true }
func (s *plainSet) Watch(func())                {}

// TestRegistryPlainToolSets: a set without a prefix claims exactly the
// names it lists now, except a built-in tool's, one inside an MCP set's
// prefix and one an earlier such set lists; it is found by name, listed
// and offered with its source; a client may not register a name it
// claims, and may once the set no longer lists it.
func TestRegistryPlainToolSets(t *testing.T) {
	r := NewRegistry(nil)
	if err := r.AddBuiltin(NewCurrentTimeTool(time.Now)); err != nil {
		t.Fatal(err)
	}
	mcp := &fixedSet{prefix: "fs__", online: true, tools: []toolgate.Tool{namedTool{"fs__read"}}}
	sandbox := &plainSet{kind: toolgate.SourceSandbox, tools: []toolgate.Tool{
		namedTool{"current_time"}, namedTool{"echo"}, namedTool{"fs__sneaky"}, namedTool{"shared"},
	}}
	other := &plainSet{kind: "other", tools: []toolgate.Tool{namedTool{"shared"}, namedTool{"solo"}}}
	for _, set := range []toolgate.ToolSet{mcp, sandbox, other} {
		if err := r.AddToolSet(set); err != nil {
			t.Fatal(err)
		}
	}
	// A prefix is still checked against the prefixed sets only.
	if err := r.AddToolSet(&fixedSet{prefix: "fs__x__"}); err == nil {
		t.Fatal("a prefix overlapping fs__ was added")
	}
	if err := r.AddToolSet(&fixedSet{prefix: "web__"}); err != nil {
		t.Fatalf("a new prefix beside sets without one: %v", err)
	}

	var listed []string
	for _, info := range r.List() {
		listed = append(listed, info.Name+"/"+info.Source.Kind)
	}
	if got, want := strings.Join(listed, " "), "current_time/builtin echo/sandbox fs__read/mcp shared/sandbox solo/other"; got != want {
		t.Fatalf("listed %q; want %q", got, want)
	}
	tools, err := r.ToolsFor(context.Background(), nullDispatcher{}, nullDispatcher{}, "")
	if err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, tool := range tools {
		offered = append(offered, tool.Name()+"/"+tool.(*GatewayTool).Source().Kind)
	}
	if got, want := strings.Join(offered, " "), "current_time/builtin echo/sandbox fs__read/mcp shared/sandbox solo/other"; got != want {
		t.Fatalf("offered %q; want %q", got, want)
	}

	for name, kind := range map[string]string{
		"echo": toolgate.SourceSandbox, "shared": toolgate.SourceSandbox, "solo": "other",
		"current_time": toolgate.SourceBuiltin, "fs__read": toolgate.SourceMCP,
	} {
		if !r.Has(name) {
			t.Errorf("Has(%s) is false", name)
		}
		if got := r.SourceOf(name).Kind; got != kind {
			t.Errorf("SourceOf(%s) = %s; want %s", name, got, kind)
		}
		if got := r.Resolve(name, "S1", nullDispatcher{}).(*GatewayTool).Source().Kind; got != kind {
			t.Errorf("Resolve(%s) runs as %s; want %s", name, got, kind)
		}
	}
	if b, ok := r.Builtin("current_time"); !ok || b.Description() == "the tool current_time" {
		t.Fatal("current_time resolves to the sandbox's tool, not the built-in one")
	}
	if r.Has("fs__sneaky") || r.Has("missing") {
		t.Fatal("a name inside an MCP prefix, or listed by no one, is known")
	}

	for name, want := range map[string]string{
		"echo":         "name is taken by a sandboxed tool",
		"solo":         "name is taken by a tool of the gateway (other)",
		"current_time": "name is taken by a built-in tool",
	} {
		err := r.CheckRemote("S1", toolgate.ToolSpec{Name: name})
		if toolgate.ErrorCode(err) != toolgate.EConflict || toolgate.ErrorMessage(err) != want {
			t.Errorf("CheckRemote(%s): %v; want CONFLICT %q", name, err, want)
		}
	}
	for name, want := range map[string]string{"current_time": toolgate.EConflict, "fs__x": toolgate.EConflict, "fresh": ""} {
		if err := r.CheckSetToolName(name); toolgate.ErrorCode(err) != want {
			t.Errorf("CheckSetToolName(%s) = %v; want code %q", name, err, want)
		}
	}

	// The set drops echo: the name is free again.
	sandbox.tools = []toolgate.Tool{namedTool{"shared"}}
	if r.Has("echo") {
		t.Fatal("echo is known after its set dropped it")
	}
	if err := r.CheckRemote("S1", toolgate.ToolSpec{Name: "echo"}); err != nil {
		t.Fatalf("a client registering a name no set lists any more: %v", err)
	}
	if got := r.SourceOf("shared").Kind; got != toolgate.SourceSandbox {
		t.Fatalf("shared belongs to %s; want the set added first", got)
	}
}
