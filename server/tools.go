package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// toolEntry is a registered tool with its compiled argument schema.
type toolEntry struct {
	spec         toolgate.ToolSpec
	schema       *jsonschema.Schema
	registeredAt time.Time
}

// defaultParameters is the schema of a tool that declares none.
var defaultParameters = json.RawMessage(`{"type":"object"}`)

// compileSchema compiles a tool's parameters, refusing what
// toolgate.CheckToolParameters refuses (in its words, as plain text like
// the compiler's own errors). Remote references are refused: a registered
// schema must be self-contained, and the gateway must never fetch a URL or
// read a file because a client named it.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if err := toolgate.CheckToolParameters(raw); err != nil {
		return nil, errors.New(toolgate.ErrorMessage(err))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parameters is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme is loadable
	const loc = "mem://tool/parameters.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("parameters is not a valid JSON Schema: %v", err)
	}
	return sch, nil
}

// newToolEntry makes the entry of a tool, its schema compiled or shared
// from schemas.
func newToolEntry(schemas *schemaCache, spec toolgate.ToolSpec, registeredAt time.Time) (*toolEntry, error) {
	if len(spec.Parameters) == 0 {
		spec.Parameters = defaultParameters
	}
	sch, err := schemas.compile(spec.Parameters)
	if err != nil {
		return nil, err
	}
	return &toolEntry{spec: spec, schema: sch, registeredAt: registeredAt}, nil
}

// validateArgs checks call arguments against the tool's schema.
func (t *toolEntry) validateArgs(args json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return toolgate.Errorf(toolgate.EInvalidArgs, "args is not valid JSON")
	}
	if err := t.schema.Validate(inst); err != nil {
		// The first line names the in-memory schema URL; the rest says what is wrong.
		lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
		if len(lines) > 1 {
			lines = lines[1:]
		}
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(strings.TrimSpace(l), "- ")
		}
		msg := strings.Join(lines, "; ")
		return toolgate.Errorf(toolgate.EInvalidArgs, "args do not match the schema of %s: %s", t.spec.Name, msg)
	}
	return nil
}

// checkSpec validates one tool of a registration with
// toolgate.CheckToolSpec, the gateway's own checks in their place (no
// shadowing a built-in tool, the registration hooks, the timeout bounds),
// and compiles its parameters. It returns the entry as it will be stored
// (requires_approval and parameters defaulted, parameters compacted), or
// the rejection.
func (e *Engine) checkSpec(sid string, spec toolgate.ToolSpec) (*toolEntry, *toolgate.ToolRejection) {
	err := toolgate.CheckToolSpec(spec, toolgate.ToolSpecChecks{
		Admit: func(spec toolgate.ToolSpec) error { return e.admitRemote(sid, spec) },
		Timeout: func(ms int64) error {
			if err := e.checkTimeout(ms); err != nil {
				return err
			}
			return nil
		},
	})
	if err != nil {
		return nil, &toolgate.ToolRejection{Name: spec.Name, Code: toolgate.ErrorCode(err), Message: toolgate.ErrorMessage(err)}
	}
	if spec.RequiresApproval == "" {
		spec.RequiresApproval = toolgate.ApprovalNever
	}
	if len(spec.Parameters) == 0 || string(spec.Parameters) == "null" {
		spec.Parameters = defaultParameters
	} else {
		spec.Parameters = json.RawMessage(compactJSON(spec.Parameters))
	}
	entry, err := newToolEntry(e.schemas, spec, e.now())
	if err != nil {
		return nil, &toolgate.ToolRejection{Name: spec.Name, Code: toolgate.EBadRequest, Message: err.Error()}
	}
	return entry, nil
}

// checkTimeout checks a requested timeout against the gateway's bounds.
func (e *Engine) checkTimeout(ms int64) *toolgate.Error {
	d := time.Duration(ms) * time.Millisecond
	if ms <= 0 || d < e.cfg.MinTimeout || d > e.cfg.MaxTimeout {
		return toolgate.Errorf(toolgate.EBadRequest, "%d ms is outside this gateway's bounds [%d, %d] ms",
			ms, e.cfg.MinTimeout.Milliseconds(), e.cfg.MaxTimeout.Milliseconds())
	}
	return nil
}

// RegisterTools registers or replaces the listed tools of a session; with
// replace, the session's tools not listed are removed. Each tool is judged
// on its own; the accepted ones are stored in one transaction.
func (e *Engine) RegisterTools(ctx context.Context, sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
	if req.Type != "" && req.Type != "register_tools" {
		return nil, toolgate.Errorf(toolgate.EBadRequest, `type must be "register_tools"`)
	}
	reply := &toolgate.ToolsRegistered{Type: "tools_registered", Count: len(req.Tools), Rejected: []toolgate.ToolRejection{}}
	accepted := map[string]*toolEntry{}
	var order []string
	for _, spec := range req.Tools {
		entry, rej := e.checkSpec(sid, spec)
		if rej == nil {
			if _, dup := accepted[spec.Name]; dup {
				rej = &toolgate.ToolRejection{Name: spec.Name, Code: toolgate.EBadRequest, Message: "name is listed twice in this registration"}
			}
		}
		if rej != nil {
			reply.Rejected = append(reply.Rejected, *rej)
			continue
		}
		accepted[spec.Name] = entry
		order = append(order, spec.Name)
	}

	// Count what the session would hold, and turn away the tools past the limit.
	keep := 0
	open := e.sessions.with(sid, func(s *sessionState) {
		if !req.Replace {
			for name := range s.tools {
				if _, listed := accepted[name]; !listed {
					keep++
				}
			}
		}
	})
	if !open {
		return nil, toolgate.Errorf(toolgate.ENotFound, "no open session %s", sid)
	}
	var fits []string
	for _, name := range order {
		if keep+len(fits) >= e.cfg.MaxToolsPerSess {
			reply.Rejected = append(reply.Rejected, toolgate.ToolRejection{Name: name, Code: toolgate.EConflict,
				Message: fmt.Sprintf("the session would hold more than %d tools", e.cfg.MaxToolsPerSess)})
			delete(accepted, name)
			continue
		}
		fits = append(fits, name)
	}

	now := e.now()
	err := e.st.Write(ctx, func(tx *store.Tx) error {
		if req.Replace {
			existing, err := tx.SessionTools(sid)
			if err != nil {
				return err
			}
			for _, t := range existing {
				if _, listed := accepted[t.Name]; !listed {
					if _, err := tx.DeleteTool(sid, t.Name); err != nil {
						return err
					}
				}
			}
		}
		for _, name := range fits {
			row := store.NewToolRow(sid, accepted[name].spec, now)
			if err := tx.UpsertTool(&row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.sessions.with(sid, func(s *sessionState) {
		if req.Replace {
			s.tools = map[string]*toolEntry{}
		}
		for _, name := range fits {
			accepted[name].registeredAt = now
			s.tools[name] = accepted[name]
		}
	})
	reply.Registered = len(fits)
	e.log.Debug("tools registered", "session", sid, "registered", len(fits), "rejected", len(reply.Rejected), "replace", req.Replace)
	return reply, nil
}

// RemoveTool removes one tool of a session.
func (e *Engine) RemoveTool(ctx context.Context, sid, name string) error {
	found, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (bool, error) { return tx.DeleteTool(sid, name) })
	if err != nil {
		return err
	}
	if !found {
		return toolgate.Errorf(toolgate.EToolNotFound, "session %s has no tool %s", sid, name)
	}
	e.sessions.with(sid, func(s *sessionState) { delete(s.tools, name) })
	return nil
}

// toolInfosLocked lists one session's tools, sorted by name. A tool is
// shown online while its session is reachable (online, or within grace).
func (e *Engine) toolInfosLocked(s *sessionState, now time.Time) []toolgate.ToolInfo {
	reachable := s.reachable(now, e.cfg)
	out := make([]toolgate.ToolInfo, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, toolgate.ToolInfo{
			ToolSpec:     t.spec,
			Source:       toolgate.ToolSource{Kind: toolgate.SourceRemote, SessionID: s.row.ID},
			Online:       reachable,
			RegisteredAt: toolgate.TimePtr(t.registeredAt),
		})
	}
	slices.SortFunc(out, func(a, b toolgate.ToolInfo) int { return compareStrings(a.Name, b.Name) })
	return out
}

// compactJSON returns raw without insignificant white space, so that what
// is stored and later written to a stream is one line.
func compactJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
