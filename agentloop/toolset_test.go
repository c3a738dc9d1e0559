package agentloop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// namedTool is a tool with a name and nothing else.
type namedTool struct{ name string }

func (t namedTool) Name() string                { return t.name }
func (t namedTool) Description() string         { return "the tool " + t.name }
func (t namedTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t namedTool) Execute(context.Context, json.RawMessage) (toolgate.Result, error) {
	return toolgate.Result{Output: json.RawMessage(`null`)}, nil
}

// fixedSet is a tool set whose tools and state the test sets.
type fixedSet struct {
	prefix  string
	tools   []toolgate.Tool
	online  bool
	watches []func()
}

func (s *fixedSet) Prefix() string { return s.prefix }
func (s *fixedSet) Source() toolgate.ToolSource {
	return toolgate.ToolSource{Kind: toolgate.SourceMCP, Server: strings.TrimSuffix(s.prefix, "__")}
}
func (s *fixedSet) Tools() []toolgate.Tool { return s.tools }
func (s *fixedSet) Online() bool           { return s.online }
func (s *fixedSet) Watch(fn func())        { s.watches = append(s.watches, fn) }

// nullDispatcher is a dispatcher that is never used by these tests.
type nullDispatcher struct{}

func (nullDispatcher) Dispatch(context.Context, DispatchRequest) (*toolgate.Call, error) {
	return nil, nil
}
func (nullDispatcher) Wait(context.Context, string, func(json.RawMessage)) (*toolgate.Call, error) {
	return nil, nil
}
func (nullDispatcher) ListTools(context.Context, string) ([]toolgate.ToolInfo, error) {
	return nil, nil
}

// TestRegistryListsAndGuardsToolSets: a tool set's tools are listed with
// the built-in ones (by name, with their source and online state), found
// by name, offered to a run only while online, and no remote tool may take
// the set's prefix, nor another set overlap it.
func TestRegistryListsAndGuardsToolSets(t *testing.T) {
	r := NewRegistry(nil)
	if err := r.AddBuiltin(NewCurrentTimeTool(time.Now)); err != nil {
		t.Fatal(err)
	}
	set := &fixedSet{prefix: "fs__", tools: []toolgate.Tool{namedTool{"fs__read"}, namedTool{"fs__write"}}}
	if err := r.AddToolSet(set); err != nil {
		t.Fatal(err)
	}
	changes := 0
	r.OnChange(func() { changes++ })
	for _, fn := range set.watches {
		fn()
	}
	if changes != 1 {
		t.Fatalf("a set's change reached the registry's watchers %d times; want 1", changes)
	}

	var listed []string
	for _, info := range r.List() {
		listed = append(listed, info.Name+"/"+info.Source.Kind+"/"+info.Source.Server)
		if info.Source.Kind == toolgate.SourceMCP && info.Online {
			t.Errorf("%s listed online while its set is offline", info.Name)
		}
	}
	if got, want := strings.Join(listed, " "), "current_time/builtin/ fs__read/mcp/fs fs__write/mcp/fs"; got != want {
		t.Fatalf("listed %q; want %q", got, want)
	}
	if !r.Has("fs__read") || r.Has("fs__delete") {
		t.Fatal("Has should know fs__read and not fs__delete")
	}
	if src := r.SourceOf("fs__read"); src.Kind != toolgate.SourceMCP || src.Server != "fs" {
		t.Fatalf("SourceOf(fs__read) = %+v", src)
	}

	offered := func() string {
		tools, err := r.ToolsFor(context.Background(), nullDispatcher{}, nullDispatcher{}, "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name())
		}
		return strings.Join(names, " ")
	}
	if got := offered(); got != "current_time" {
		t.Fatalf("a run was offered %q while the set is offline; want only current_time", got)
	}
	set.online = true
	if got := offered(); got != "current_time fs__read fs__write" {
		t.Fatalf("a run was offered %q while the set is online", got)
	}

	err := r.CheckRemote("s1", toolgate.ToolSpec{Name: "fs__anything"})
	if toolgate.ErrorCode(err) != toolgate.EConflict {
		t.Fatalf("a remote tool in the set's prefix: %v; want CONFLICT", err)
	}
	if err := r.CheckRemote("s1", toolgate.ToolSpec{Name: "fsx"}); err != nil {
		t.Fatalf("a remote tool outside every prefix was refused: %v", err)
	}
	for _, prefix := range []string{"fs__", "f", "fs__x__", "current"} {
		if err := r.AddToolSet(&fixedSet{prefix: prefix}); err == nil {
			t.Errorf("a set with prefix %q was added over fs__ or a built-in tool", prefix)
		}
	}
}
