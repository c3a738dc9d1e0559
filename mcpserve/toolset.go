package mcpserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// offer is one tool an SDK server is to list: its MCP definition and the
// handler of its calls.
type offer struct {
	key     toolKey
	name    string
	tool    *mcp.Tool // nil when err says why it cannot be listed
	err     error
	handler mcp.ToolHandler
}

// newOffer builds the offer of a tool listed under name; ownerNote is
// added to its description (buildTool).
func newOffer(key toolKey, name string, info toolgate.ToolInfo, ownerNote string, handler mcp.ToolHandler) offer {
	t, err := buildTool(name, info, ownerNote)
	if err == nil && t.OutputSchema != nil {
		handler = checkedOutput(info.OutputSchema, handler)
	}
	return offer{key: key, name: name, tool: t, err: err, handler: handler}
}

// listed is a tool an SDK server lists, and the definition it was added
// with (JSON): a tool whose definition changes is added again.
type listed struct {
	key        toolKey
	definition string
}

// toolSet keeps one SDK server's tool list in step with what the gateway
// offers, source by source (a session id, or "" for the tools called
// without a session): Server.AddTool and RemoveTools, after which the SDK
// tells the hosts list_changed. A definition the SDK would refuse (its
// AddTool panics) is left out with a warning, once per definition.
type toolSet struct {
	server *mcp.Server
	log    *slog.Logger

	mu       sync.Mutex
	listed   map[string]listed            // by MCP name
	bySource map[string]map[string]string // source → tool → MCP name
	refused  map[toolKey]string           // definitions left out, warned of
}

func newToolSet(server *mcp.Server, log *slog.Logger) *toolSet {
	return &toolSet{server: server, log: log, listed: map[string]listed{},
		bySource: map[string]map[string]string{}, refused: map[toolKey]string{}}
}

// replace makes source's listed tools exactly offers, and returns the
// keys of the tools it no longer lists (gone, or refused by the SDK), so
// that their names can be given to others.
func (s *toolSet) replace(source string, offers []offer) (dropped []toolKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.bySource[source]
	now := make(map[string]string, len(offers))
	wanted := make(map[string]bool, len(offers))
	for _, o := range offers {
		wanted[o.key.tool] = true
	}
	var remove []string
	for tool, name := range old {
		if !wanted[tool] {
			remove = append(remove, name)
			delete(s.listed, name)
			dropped = append(dropped, toolKey{source, tool})
		}
	}
	for key := range s.refused {
		if key.session == source && !wanted[key.tool] {
			delete(s.refused, key)
		}
	}
	if len(remove) > 0 {
		s.server.RemoveTools(remove...)
	}
	for _, o := range offers {
		definition := definitionOf(o)
		if was, ok := s.listed[o.name]; ok && was.key == o.key && was.definition == definition {
			now[o.key.tool] = o.name
			continue
		}
		if s.refused[o.key] == definition {
			if name, ok := old[o.key.tool]; ok {
				s.server.RemoveTools(name)
				delete(s.listed, name)
			}
			dropped = append(dropped, o.key)
			continue // warned of already
		}
		err := o.err
		if err == nil {
			err = addTool(s.server, o.tool, o.handler)
		}
		if err != nil {
			s.refused[o.key] = definition
			s.log.Warn("MCP: a tool is left out of the listing: the MCP SDK refuses its definition",
				"session", o.key.session, "tool", o.key.tool, "err", err)
			if name, ok := old[o.key.tool]; ok { // its earlier definition goes too
				s.server.RemoveTools(name)
				delete(s.listed, name)
			}
			dropped = append(dropped, o.key)
			continue
		}
		delete(s.refused, o.key)
		s.listed[o.name] = listed{key: o.key, definition: definition}
		now[o.key.tool] = o.name
	}
	if len(now) == 0 {
		delete(s.bySource, source)
	} else {
		s.bySource[source] = now
	}
	return dropped
}

// definitionOf is what an offer is compared by: its MCP definition, or
// its error.
func definitionOf(o offer) string {
	if o.err != nil {
		return "refused: " + o.err.Error()
	}
	b, err := json.Marshal(o.tool)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
}

// addTool adds t to server, turning the SDK's panic over a definition it
// refuses (an input schema whose type is not "object", bad x-mcp-header
// annotations) into an error. The SDK checks before it changes anything.
func addTool(server *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	server.AddTool(t, h)
	return nil
}

// inputSchema returns a tool's parameters as an MCP input schema, passed
// on as its bytes: none is {"type":"object"}; a schema without a "type" is
// wrapped as {"type":"object","allOf":[schema]} (MCP arguments are always
// an object, so this accepts what the schema accepts); a schema of
// another type cannot be listed.
func inputSchema(parameters json.RawMessage) (json.RawMessage, error) {
	if len(parameters) == 0 || string(parameters) == "null" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(parameters, &top); err != nil {
		return nil, fmt.Errorf("parameters is not a JSON object: %w", err)
	}
	raw, ok := top["type"]
	if !ok {
		wrapped := make([]byte, 0, len(parameters)+32)
		wrapped = append(wrapped, `{"type":"object","allOf":[`...)
		wrapped = append(wrapped, parameters...)
		wrapped = append(wrapped, "]}"...)
		return wrapped, nil
	}
	var typ string
	if err := json.Unmarshal(raw, &typ); err != nil || typ != "object" {
		return nil, errors.New(`an MCP tool's input schema must have "type": "object"`)
	}
	return parameters, nil
}

// metaKey prefixes the keys toolgate puts in MCP _meta objects.
const metaKey = "io.toolgate/"

// MetaDescriptionWithheld, true on a listed tool, says its description
// or its parameters' descriptions held text aimed at a model and are
// shown withheld (the tool stays callable).
const MetaDescriptionWithheld = metaKey + "description_withheld"

// buildTool makes the MCP definition of a tool listed under name;
// ownerNote, when not empty, is added to the description (whose tool it
// is, on /mcp).
func buildTool(name string, info toolgate.ToolInfo, ownerNote string) (*mcp.Tool, error) {
	schema, err := inputSchema(info.Parameters)
	if err != nil {
		return nil, err
	}
	description := info.Description
	if ownerNote != "" {
		if description != "" {
			description += "\n\n"
		}
		description += ownerNote
	}
	t := &mcp.Tool{
		Name:        name,
		Description: description,
		InputSchema: schema,
		Meta:        mcp.Meta{metaKey + "tool": info.Name, metaKey + "source": info.Source},
	}
	if info.DescriptionWithheld {
		t.Meta[MetaDescriptionWithheld] = true
	}
	if err := present(t, info); err != nil {
		return nil, err
	}
	return t, nil
}

// present puts a tool's presentation on its MCP definition, unchanged:
// its title, annotations (with readOnlyHint from read_only), output
// schema (as its bytes) and icons.
func present(t *mcp.Tool, info toolgate.ToolInfo) error {
	p := info.Presentation()
	t.Title = p.Title
	if info.ReadOnly || p.Annotations != nil {
		a := &mcp.ToolAnnotations{ReadOnlyHint: info.ReadOnly}
		if p.Annotations != nil {
			a.Title = p.Annotations.Title
			a.DestructiveHint = p.Annotations.DestructiveHint
			a.OpenWorldHint = p.Annotations.OpenWorldHint
			if p.Annotations.IdempotentHint != nil {
				a.IdempotentHint = *p.Annotations.IdempotentHint
			}
		}
		t.Annotations = a
	}
	if len(p.OutputSchema) > 0 && string(p.OutputSchema) != "null" {
		t.OutputSchema = p.OutputSchema
	}
	if len(p.Icons) > 0 && string(p.Icons) != "null" {
		if err := json.Unmarshal(p.Icons, &t.Icons); err != nil {
			return fmt.Errorf("its icons: %v", err)
		}
	}
	return nil
}
