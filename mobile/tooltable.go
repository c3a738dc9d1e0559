package mobile

import (
	"sort"
	"sync"

	"github.com/toolgate/toolgate"
)

// toolTable is the tools the client offers and the handlers their calls
// go to: the one owner of both, so a call finds the handler of a tool
// offered at that moment.
type toolTable struct {
	mu       sync.Mutex
	specs    map[string]toolgate.ToolSpec
	handlers map[string]CallHandler // per tool, set by SetToolHandler or a bridge
	fallback CallHandler            // for a tool without a handler of its own
}

func newToolTable() *toolTable {
	return &toolTable{specs: map[string]toolgate.ToolSpec{}, handlers: map[string]CallHandler{}}
}

// add keeps the tools (replacing any of the same name) and their handlers.
func (t *toolTable) add(tools []registeredTool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tool := range tools {
		t.specs[tool.spec.Name] = tool.spec
		if tool.handler != nil {
			t.handlers[tool.spec.Name] = tool.handler
		}
	}
}

// remove forgets the tools and their handlers.
func (t *toolTable) remove(names []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range names {
		delete(t.specs, name)
		delete(t.handlers, name)
	}
}

// drop forgets the tools the gateway rejected; their handlers stay, as a
// handler may be set before its tool is registered.
func (t *toolTable) drop(rejected []toolgate.ToolRejection) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range rejected {
		delete(t.specs, r.Name)
	}
}

// names returns the tools' names, sorted.
func (t *toolTable) names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.specs))
	for name := range t.specs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// list returns the tools' specs, sorted by name.
func (t *toolTable) list() []toolgate.ToolSpec {
	t.mu.Lock()
	specs := make([]toolgate.ToolSpec, 0, len(t.specs))
	for _, spec := range t.specs {
		specs = append(specs, spec)
	}
	t.mu.Unlock()
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

// setHandler routes the calls of one tool to h; nil removes the routing.
func (t *toolTable) setHandler(name string, h CallHandler) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h == nil {
		delete(t.handlers, name)
	} else {
		t.handlers[name] = h
	}
}

// setFallback sets the handler of the tools without one of their own.
func (t *toolTable) setFallback(h CallHandler) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fallback = h
}

// handlerFor returns the handler for a tool this client offers, or nil.
func (t *toolTable) handlerFor(name string) CallHandler {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, offered := t.specs[name]; !offered {
		return nil
	}
	if h := t.handlers[name]; h != nil {
		return h
	}
	return t.fallback
}
