package mcpimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate"
)

// maxToolName is the longest tool name the gateway takes (NAME__tool
// included), as toolgate.ToolNamePattern says.
const maxToolName = 64

// tool is one tool of an imported server, as the registry sees it.
type tool struct {
	srv         *Server
	name        string // NAME__tool, as the gateway and the model call it
	remote      string // the server's own name for it
	description string
	parameters  json.RawMessage
	readOnly    bool
	// presentation is the tool's title, annotations, output schema and
	// icons as the server lists them (each left out when the gateway
	// refuses it); output is its output schema compiled, nil without one.
	presentation toolgate.Presentation
	output       *jsonschema.Schema
}

var (
	_ toolgate.Tool         = (*tool)(nil)
	_ toolgate.Availability = (*tool)(nil)
	_ toolgate.ReadOnlyer   = (*tool)(nil)
	_ toolgate.Presenter    = (*tool)(nil)
)

// Name implements toolgate.Tool.
func (t *tool) Name() string { return t.name }

// Description implements toolgate.Tool.
func (t *tool) Description() string { return t.description }

// Parameters implements toolgate.Tool.
func (t *tool) Parameters() json.RawMessage { return t.parameters }

// ReadOnly implements toolgate.ReadOnlyer: the server's readOnlyHint.
func (t *tool) ReadOnly() bool { return t.readOnly }

// Presentation implements toolgate.Presenter: the server's title,
// annotations, outputSchema and icons.
func (t *tool) Presentation() toolgate.Presentation { return t.presentation }

// Unavailable implements toolgate.Availability: TOOL_OFFLINE while the
// server is down.
func (t *tool) Unavailable() error { return t.srv.offlineError(t.name) }

// convertTools turns the server's list into the gateway's tools, sorted
// by name, leaving out those the gateway cannot take, with a warning the
// first time (not at every listing).
func (s *Server) convertTools(listed []*mcp.Tool) []toolgate.Tool {
	out := make([]toolgate.Tool, 0, len(listed))
	taken := map[string]string{} // gateway name -> remote name
	warned := s.leftOut
	s.leftOut = map[string]string{}
	for _, mt := range listed {
		t, err := s.convertTool(mt, warned)
		if err == nil {
			if other, dup := taken[t.name]; dup {
				err = fmt.Errorf("its name becomes %s, as %q's does", t.name, other)
			}
		}
		if err != nil {
			why := s.redactText(err.Error())
			if warned[mt.Name] != why {
				s.log.Warn("MCP tool left out", "tool", mt.Name, "why", why)
			}
			s.leftOut[mt.Name] = why
			continue
		}
		taken[t.name] = mt.Name
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b toolgate.Tool) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// convertTool maps one MCP tool: its name (characters outside
// [A-Za-z0-9_-] become '_'), a description (its title, or a sentence
// naming it, when it has none; cut to the gateway's limit), its input
// schema, its readOnlyHint, and its presentation (presentTool; warned
// are the warnings of the previous listing). The result passes
// toolgate.CheckToolSpec.
func (s *Server) convertTool(mt *mcp.Tool, warned map[string]string) (*tool, error) {
	if mt.Name == "" {
		return nil, fmt.Errorf("it has no name")
	}
	name := importedToolName(s.Prefix(), mt.Name)
	description := strings.TrimSpace(mt.Description)
	if description == "" {
		description = strings.TrimSpace(mt.Title)
	}
	if description == "" {
		description = fmt.Sprintf("The tool %s of the MCP server %s.", mt.Name, s.cfg.Name)
	}
	if r := []rune(description); len(r) > toolgate.MaxDescriptionLength {
		description = string(r[:toolgate.MaxDescriptionLength-1]) + "…"
	}
	params := json.RawMessage(`{"type":"object"}`)
	if mt.InputSchema != nil {
		raw, err := json.Marshal(mt.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("its input schema: %v", err)
		}
		if !bytes.Equal(raw, []byte("null")) {
			params = withObjectType(raw)
		}
	}
	t := &tool{srv: s, name: name, remote: mt.Name, description: description, parameters: params}
	if mt.Annotations != nil {
		t.readOnly = mt.Annotations.ReadOnlyHint
	}
	s.presentTool(t, mt, warned)
	if err := toolgate.CheckToolSpec(toolgate.SpecOf(t), toolgate.ToolSpecChecks{}); err != nil {
		return nil, fmt.Errorf("the gateway refuses it: %s", toolgate.ErrorMessage(err))
	}
	return t, nil
}

// gatewayToolName replaces the characters a gateway tool name cannot hold.
func gatewayToolName(remote string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, remote)
}

// sameTools reports whether two lists describe the same tools.
func sameTools(a, b []toolgate.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i].(*tool), b[i].(*tool)
		if x.name != y.name || x.remote != y.remote || x.description != y.description ||
			x.readOnly != y.readOnly || !bytes.Equal(x.parameters, y.parameters) ||
			!samePresentation(x.presentation, y.presentation) {
			return false
		}
	}
	return true
}
