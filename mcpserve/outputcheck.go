package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate"
)

// checkedOutput wraps the handler of a tool with an output schema so that
// a completed call's structuredContent is checked against it before the
// host sees it: an output that is not a JSON object, or does not match,
// becomes an isError result of code OUTPUT_INVALID saying why (the call
// record keeps the output as the tool gave it). The schema is compiled at
// the first call (registration checked that it compiles, within the
// limits of a parameters schema).
func checkedOutput(raw json.RawMessage, h mcp.ToolHandler) mcp.ToolHandler {
	schema := sync.OnceValues(func() (*jsonschema.Schema, error) { return compileOutputSchema(raw) })
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		if err != nil || res == nil || res.IsError {
			return res, err
		}
		if _, task := res.Meta[metaTaskCreated]; task {
			return res, nil // a task: its result is checked when it is read (checkedTaskResult)
		}
		if why := outputMismatch(schema, res.StructuredContent); why != "" {
			return errorResult(toolgate.CallError{Code: toolgate.EOutputInvalid, Message: why}, res.Meta), nil
		}
		return res, nil
	}
}

// outputMismatch says why structured (a result's structuredContent) does
// not pass the tool's output schema, or "" when it does.
func outputMismatch(schema func() (*jsonschema.Schema, error), structured any) string {
	sch, err := schema()
	if err != nil {
		return fmt.Sprintf("the tool's output_schema does not compile: %v", err)
	}
	raw, ok := structured.(json.RawMessage)
	if !ok && structured != nil {
		raw, _ = json.Marshal(structured)
	}
	if raw == nil {
		return "the tool declares an output_schema, and its output is not a JSON object"
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err == nil {
		err = sch.Validate(v)
	}
	if err != nil {
		return fmt.Sprintf("the tool's output does not match its output_schema: %v", err)
	}
	return ""
}

// compileOutputSchema compiles an output schema, loading nothing from
// outside it.
func compileOutputSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if err := toolgate.CheckToolOutputSchema(raw); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme is loadable
	const loc = "mem://tool/output_schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// checkedTaskResult is a task's result as a plain tools/call of the same
// tool gives it: past the safety step and, for a completed call of a tool
// that declares an output schema now, checked against it (the plain path
// checks in the tool's handler, checkedOutput; a task's result is mapped
// later, from the stored call, perhaps on another node).
func (t *taskServer) checkedTaskResult(ctx context.Context, c *toolgate.Call) *mcp.CallToolResult {
	res := t.ep.guardedResultOf(ctx, c)
	if res.IsError {
		return res
	}
	raw := t.outputSchemaOf(ctx, c)
	if len(raw) == 0 {
		return res
	}
	schema := func() (*jsonschema.Schema, error) { return compileOutputSchema(raw) }
	if why := outputMismatch(schema, res.StructuredContent); why != "" {
		return errorResult(toolgate.CallError{Code: toolgate.EOutputInvalid, Message: why}, res.Meta)
	}
	return res
}

// outputSchemaOf returns the output schema c's tool declares now (nil for
// none, or when the tool or its session is gone).
func (t *taskServer) outputSchemaOf(ctx context.Context, c *toolgate.Call) json.RawMessage {
	var tools []toolgate.ToolInfo
	if c.SessionID == "" {
		tools = t.ep.remote.GatewayTools()
	} else if view, err := t.ep.views.SessionView(ctx, c.SessionID); err == nil && view != nil {
		tools = view.Tools
	}
	for _, t := range tools {
		if t.Name == c.Tool {
			return t.OutputSchema
		}
	}
	return nil
}
