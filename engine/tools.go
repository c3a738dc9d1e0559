package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// toolEntry is a registered tool and its argument schema, compiled when
// the tool is registered, or on the first call of a tool loaded from the
// database (start-up compiles nothing).
type toolEntry struct {
	spec         toolgate.ToolSpec
	registeredAt time.Time
	schemas      *schemaCache                   // where its schema is compiled
	compiled     atomic.Pointer[compiledSchema] // nil until compiled (or refused)
}

// compiledSchema is the outcome of compiling a tool's parameters: the
// schema, or why there is none.
type compiledSchema struct {
	schema *jsonschema.Schema
	// perValue bounds the subschema evaluations of one value of args
	// (toolgate.SchemaCost.PerValue).
	perValue int64
	err      error
}

// defaultParameters is the schema of a tool that declares none.
var defaultParameters = json.RawMessage(`{"type":"object"}`)

// compileSchema compiles a tool's parameters, which have passed
// toolgate.CheckToolParameters (schemaCache.compile checks first). Remote
// references are refused: a registered schema must be self-contained, and
// the gateway must never fetch a URL or read a file because a client
// named it.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parameters is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme is loadable
	regexps := &boundedRegexps{}
	c.UseRegexpEngine(regexps.compile)
	const loc = "mem://tool/parameters.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(loc)
	regexps.compiled.Store(true)
	if err != nil {
		return nil, fmt.Errorf("parameters is not a valid JSON Schema: %v", err)
	}
	return sch, nil
}

// The bounds of the regular expressions of a tool's schema (pattern,
// patternProperties, and the strings of args checked with "format":
// "regex"), in instructions of the compiled program: a counted
// repetition grows the program without growing the pattern (\pL{1000} is
// 8 bytes and about 1,000 instructions of a hundred bytes each), and the
// program is what a compiled schema keeps (BENCHMARKS.md, "Tool schemas:
// the limits and their worst case").
const (
	// maxRegexpInsts bounds one regular expression's program.
	maxRegexpInsts = 2000
	// maxSchemaRegexpInsts bounds the programs of one schema's regular
	// expressions together (each is compiled twice: once as the
	// meta-schema checks it, once for the schema).
	maxSchemaRegexpInsts = 40000
)

// boundedRegexps is the regexp engine of one schema's compile: Go's
// regexp (RE2: linear-time matching), refusing a regular expression over
// toolgate.MaxPatternLength or maxRegexpInsts and, while the schema
// compiles, more than maxSchemaRegexpInsts in all.
type boundedRegexps struct {
	compiled atomic.Bool  // set once the schema is compiled
	insts    atomic.Int64 // the instructions compiled with the schema
}

// compile is the jsonschema.RegexpEngine.
func (b *boundedRegexps) compile(pattern string) (jsonschema.Regexp, error) {
	if len(pattern) > toolgate.MaxPatternLength {
		return nil, fmt.Errorf("the regular expression is %d bytes; the limit is %d", len(pattern), toolgate.MaxPatternLength)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	if n := len(prog.Inst); n > maxRegexpInsts {
		return nil, fmt.Errorf("the regular expression compiles to %d instructions; the limit is %d (a counted repetition such as {1000} multiplies what it repeats)", n, maxRegexpInsts)
	}
	if !b.compiled.Load() && b.insts.Add(int64(len(prog.Inst))) > maxSchemaRegexpInsts {
		return nil, fmt.Errorf("the regular expressions of the schema compile to more than %d instructions in all", maxSchemaRegexpInsts)
	}
	return regexp.Compile(pattern)
}

// storedToolEntry is the entry of a tool whose schema is compiled, in
// schemas, on first use (argsSchema).
func storedToolEntry(schemas *schemaCache, spec toolgate.ToolSpec, registeredAt time.Time) *toolEntry {
	if len(spec.Parameters) == 0 || string(spec.Parameters) == "null" {
		spec.Parameters = defaultParameters
	}
	return &toolEntry{spec: spec, registeredAt: registeredAt, schemas: schemas}
}

// newToolEntry makes the entry of a tool, its schema compiled now or
// shared from schemas. It is for the gateway's own tools (the built-in
// ones), whose compile nothing cancels.
func newToolEntry(schemas *schemaCache, spec toolgate.ToolSpec, registeredAt time.Time) (*toolEntry, error) {
	entry := storedToolEntry(schemas, spec, registeredAt)
	if _, err := entry.argsSchema(context.Background()); err != nil {
		return nil, err
	}
	return entry, nil
}

// argsSchema returns the tool's compiled schema, compiling it the first
// time. Its outcome is kept, a refusal too (a stored schema that no longer
// compiles, or is over the limits, is not tried again at every call) —
// unless ctx ended while the compile waited for its turn.
func (t *toolEntry) argsSchema(ctx context.Context) (*jsonschema.Schema, error) {
	c, err := t.compiledArgsSchema(ctx)
	if err != nil {
		return nil, err
	}
	return c.schema, c.err
}

// compiledArgsSchema is argsSchema's outcome with the schema's cost
// bound, counted once with the compile; the error is ctx's only.
func (t *toolEntry) compiledArgsSchema(ctx context.Context) (*compiledSchema, error) {
	if c := t.compiled.Load(); c != nil {
		return c, nil
	}
	sch, err := t.schemas.compile(ctx, t.spec.Parameters)
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	outcome := &compiledSchema{schema: sch, err: err}
	if err == nil {
		// The schema passed CheckToolParameters, whose cost check this
		// count repeats (milliseconds at most); a cached compile skipped it.
		cost, err := toolgate.SchemaEvaluations(t.spec.Parameters)
		if err != nil {
			outcome = &compiledSchema{err: errors.New(toolgate.ErrorMessage(err))}
		}
		outcome.perValue = cost.PerValue
	}
	t.compiled.CompareAndSwap(nil, outcome)
	return t.compiled.Load(), nil
}

// maxShownCauses is how many of a failed validation's causes its error
// message lists; the rest are counted.
const maxShownCauses = 10

// validateArgs checks call arguments: first that every reader reads them
// alike (toolgate.CheckStrictJSON: they are forwarded as they are), then
// against the tool's schema, compiled now if it was not yet.
//
// The validation cannot be stopped once it runs, so its work is bounded
// before: the values of args (counted by the strict check's pass) times
// the evaluations one value may cost against the schema must be within
// toolgate.MaxValidationEvaluations, or the call is refused with
// PAYLOAD_TOO_LARGE. A failed validation's message lists its first
// maxShownCauses causes.
func (t *toolEntry) validateArgs(ctx context.Context, args json.RawMessage) error {
	values, err := toolgate.CheckStrictJSONValues(args)
	if err != nil {
		return toolgate.Errorf(toolgate.EBadRequest, "args %s", err)
	}
	compiled, err := t.compiledArgsSchema(ctx)
	if err != nil {
		return err
	}
	schema := compiled.schema
	if compiled.err != nil {
		return toolgate.Errorf(toolgate.EConflict,
			"the tool %s cannot be called: its stored parameters are refused (%v); its client must register it again", t.spec.Name, compiled.err)
	}
	if work := int64(values) * compiled.perValue; work > toolgate.MaxValidationEvaluations {
		return toolgate.Errorf(toolgate.EPayloadTooLarge,
			"args hold %d values, and checking each against the schema of %s may cost up to %d subschema evaluations: %d in all, over the limit of %d; send fewer values",
			values, t.spec.Name, compiled.perValue, work, int64(toolgate.MaxValidationEvaluations))
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return toolgate.Errorf(toolgate.EInvalidArgs, "args is not valid JSON")
	}
	if err := schema.Validate(inst); err != nil {
		// The first line names the in-memory schema URL; the rest says what is wrong.
		lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
		if len(lines) > 1 {
			lines = lines[1:]
		}
		more := 0
		if len(lines) > maxShownCauses {
			more = len(lines) - maxShownCauses
			lines = lines[:maxShownCauses]
		}
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(strings.TrimSpace(l), "- ")
		}
		msg := strings.Join(lines, "; ")
		if more > 0 {
			msg += fmt.Sprintf("; …and %d more", more)
		}
		return toolgate.Errorf(toolgate.EInvalidArgs, "args do not match the schema of %s: %s", t.spec.Name, msg)
	}
	return nil
}

// checkSpec validates one tool of a registration with
// toolgate.CheckToolSpec, the gateway's own checks in their place (no
// shadowing a built-in tool, the registration hooks, the timeout bounds).
// Its parameters are checked against the schema limits but not compiled:
// RegisterTools compiles only the tools within the session's cap. It
// returns the entry as it will be stored (requires_approval and
// parameters defaulted, parameters compacted), or the rejection.
func (e *Tools) checkSpec(sid string, spec toolgate.ToolSpec) (*toolEntry, *toolgate.ToolRejection) {
	err := toolgate.CheckToolSpec(spec, toolgate.ToolSpecChecks{
		Admit: func(spec toolgate.ToolSpec) error { return e.builtinOps.admitRemote(sid, spec) },
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
	return storedToolEntry(e.schemas, spec, e.now()), nil
}

// checkOutputSchema compiles a tool's output_schema, when it has one, as
// its parameters are (the same limits, the same compile slots), so that
// a schema MCP hosts could not compile is refused at registration.
func (e *Tools) checkOutputSchema(ctx context.Context, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if _, err := e.schemas.compile(ctx, raw); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// The compiler names what it compiles "parameters".
		return errors.New("output_schema: " + strings.TrimPrefix(err.Error(), "parameters "))
	}
	return nil
}

// checkTimeout checks a requested timeout against the gateway's bounds.
func (e *core) checkTimeout(ms int64) *toolgate.Error {
	d := time.Duration(ms) * time.Millisecond
	if ms <= 0 || d < e.cfg.MinTimeout || d > e.cfg.MaxTimeout {
		return toolgate.Errorf(toolgate.EBadRequest, "%d ms is outside this gateway's bounds [%d, %d] ms",
			ms, e.cfg.MinTimeout.Milliseconds(), e.cfg.MaxTimeout.Milliseconds())
	}
	return nil
}

// RegisterTools registers or replaces the listed tools of a session; with
// replace, the session's tools not listed are removed. Each tool is judged
// on its own; the accepted ones are stored in one transaction. The cheap
// checks come first, for every tool; then the session's tool cap, in the
// order listed; only then are the schemas of the tools within the cap
// compiled, so a long list costs no compile past the cap.
func (e *Tools) RegisterTools(ctx context.Context, sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
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
	var within []string
	for _, name := range order {
		if keep+len(within) >= e.cfg.MaxToolsPerSess {
			reply.Rejected = append(reply.Rejected, toolgate.ToolRejection{Name: name, Code: toolgate.EConflict,
				Message: fmt.Sprintf("the session would hold more than %d tools", e.cfg.MaxToolsPerSess)})
			delete(accepted, name)
			continue
		}
		within = append(within, name)
	}

	// Compile the schemas of the tools within the cap (each waits for a
	// compile slot; a client that leaves stops the wait).
	var fits []string
	for _, name := range within {
		_, err := accepted[name].argsSchema(ctx)
		if err == nil {
			err = e.checkOutputSchema(ctx, accepted[name].spec.OutputSchema)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			reply.Rejected = append(reply.Rejected, toolgate.ToolRejection{Name: name, Code: toolgate.EBadRequest, Message: err.Error()})
			delete(accepted, name)
			continue
		}
		fits = append(fits, name)
	}

	now := e.now()
	version, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (int64, error) {
		// First, so that registrations of one session made at once (on
		// several nodes, too) take turns, and the count below sees the
		// other's tools.
		version, err := tx.BumpSession(sid, now)
		if err != nil || version == 0 {
			return 0, store.Refuse(orClosed(err, sid))
		}
		if req.Replace {
			existing, err := tx.SessionTools(sid)
			if err != nil {
				return 0, err
			}
			for _, t := range existing {
				if _, listed := accepted[t.Name]; !listed {
					if _, err := tx.DeleteTool(sid, t.Name); err != nil {
						return 0, err
					}
				}
			}
		}
		for _, name := range fits {
			row := store.NewToolRow(sid, accepted[name].spec, now)
			if err := tx.UpsertTool(&row); err != nil {
				return 0, err
			}
		}
		// The cap counted above from memory, counted again in the table:
		// a registration committed meanwhile (here or on another node)
		// may have filled it. Not a refusal: the writes above are undone.
		n, err := tx.CountTools(sid)
		if err == nil && n > e.cfg.MaxToolsPerSess {
			err = toolgate.Errorf(toolgate.EConflict,
				"the session would hold %d tools, more than %d, with a registration made at the same time; nothing was registered: retry", n, e.cfg.MaxToolsPerSess)
		}
		return version, err
	})
	if err != nil {
		return nil, err
	}
	e.applyOwnChange(ctx, sid, version, func(s *sessionState) {
		if req.Replace {
			s.tools = map[string]*toolEntry{}
		}
		for _, name := range fits {
			accepted[name].registeredAt = now
			s.tools[name] = accepted[name]
		}
	})
	reply.Registered = len(fits)
	if len(fits) > 0 || req.Replace {
		e.toolWatch.changed(sid)
	}
	e.log.Debug("tools registered", "session", sid, "registered", len(fits), "rejected", len(reply.Rejected), "replace", req.Replace)
	return reply, nil
}

// RemoveTool removes one tool of a session.
func (e *Tools) RemoveTool(ctx context.Context, sid, name string) error {
	version, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (int64, error) {
		version, err := tx.BumpSession(sid, e.now())
		if err != nil || version == 0 {
			return 0, store.Refuse(orClosed(err, sid))
		}
		found, err := tx.DeleteTool(sid, name)
		if err == nil && !found {
			// The bump above is undone with it.
			err = toolgate.Errorf(toolgate.EToolNotFound, "session %s has no tool %s", sid, name)
		}
		return version, err
	})
	if err != nil {
		return err
	}
	e.applyOwnChange(ctx, sid, version, func(s *sessionState) { delete(s.tools, name) })
	e.toolWatch.changed(sid)
	return nil
}

// toolInfosLocked lists one session's tools, sorted by name. A tool is
// shown online while its session is reachable (online, or within grace).
func (e *Tools) toolInfosLocked(s *sessionState, now time.Time) []toolgate.ToolInfo {
	reachable := s.reachable(now, e.cfg)
	presence := s.presence(now, e.cfg)
	out := make([]toolgate.ToolInfo, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, toolgate.ToolInfo{
			ToolSpec:     t.spec,
			Source:       toolgate.ToolSource{Kind: toolgate.SourceRemote, SessionID: s.row.ID},
			Online:       reachable,
			Presence:     presence,
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

// orClosed is err, or when there is none, the refusal of a change to a
// session that is not open (BumpSession found no open session).
func orClosed(err error, sid string) error {
	if err != nil {
		return err
	}
	return toolgate.Errorf(toolgate.ENotFound, "no open session %s", sid)
}
