package mcpimport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// The call error codes of an imported tool, besides TOOL_OFFLINE (the
// server went away during the call) and PAYLOAD_TOO_LARGE (its result is
// over Options.MaxResultBytes, or a message of the server over what the
// gateway reads of one: 4 × MaxResultBytes over HTTP, the SDK's 16 MiB
// line over stdio, which also ends the connection).
const (
	// CodeToolError: the tool ran and reported a failure (isError); the
	// message is its text, the details its content.
	CodeToolError = "TOOL_ERROR"
	// CodeMCPError: the server refused the call with a JSON-RPC error (an
	// unknown tool, arguments it rejects…); the details carry its code.
	CodeMCPError = "MCP_ERROR"
)

// frameTooLargeText is the text of the SDK's error (unexported) when a
// stdio server sends a line over mcp.DefaultMaxLineLength: the SDK cannot
// skip it, and the connection is over. TestStdioResultOverLineLimit pins
// it.
const frameTooLargeText = "exceeded the configured maximum line length"

// maxErrorMessage bounds the message of a TOOL_ERROR or MCP_ERROR, in
// characters.
const maxErrorMessage = 2000

// Execute implements toolgate.Tool: tools/call on the server, with ctx
// (the engine cancels it when the call is cancelled or times out, and the
// SDK then sends notifications/cancelled), a progress token whose
// notifications/progress go on through toolgate.ReportProgress, and the
// result mapped onto the gateway's (resultOutput).
//
// Its error passes Options.Redact: it holds what the server answered.
func (t *tool) Execute(ctx context.Context, args json.RawMessage) (toolgate.Result, error) {
	res, err := t.execute(ctx, args)
	return res, t.srv.redactError(err)
}

func (t *tool) execute(ctx context.Context, args json.RawMessage) (toolgate.Result, error) {
	cs, err := t.srv.currentSession(t.name)
	if err != nil {
		return toolgate.Result{}, err
	}
	started := time.Now()
	token, stop := t.srv.progress.open(ctx)
	defer stop()
	params := &mcp.CallToolParams{Name: t.remote}
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		params.Arguments = json.RawMessage(trimmed)
	}
	params.SetProgressToken(token)
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return toolgate.Result{}, ctx.Err()
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == codeMessageTooLarge && bytes.Equal(werr.Data, t.srv.tooLargeMark) {
			return toolgate.Result{}, toolgate.Errorf(toolgate.EPayloadTooLarge, "the MCP tool's result is over %d bytes as sent by the MCP server %s; the gateway reads at most that of one message, and takes at most %d bytes of JSON as a result",
				t.srv.messageBound, t.srv.cfg.Name, t.srv.opts.MaxResultBytes).WithDetails(map[string]any{"server": t.srv.cfg.Name})
		}
		if answered(err) && errors.As(err, &werr) {
			return toolgate.Result{}, toolgate.Errorf(CodeMCPError, "the MCP server %s refused the call: %s", t.srv.cfg.Name, cut(werr.Message, maxErrorMessage)).
				WithDetails(map[string]any{"server": t.srv.cfg.Name, "mcp_code": werr.Code})
		}
		signal(t.srv.check) // the server may be gone: the loop looks now
		if strings.Contains(err.Error(), frameTooLargeText) {
			return toolgate.Result{}, toolgate.Errorf(toolgate.EPayloadTooLarge, "the MCP server %s sent a message over %d bytes, the most the stdio transport reads of one (this call's result, or another message sent during it); a line that long cannot be skipped, so the gateway restarts the server",
				t.srv.cfg.Name, mcp.DefaultMaxLineLength).WithDetails(map[string]any{"server": t.srv.cfg.Name, "restarted": true})
		}
		return toolgate.Result{}, toolgate.Errorf(toolgate.EToolOffline, "the MCP server %s could not be reached during the call: %v", t.srv.cfg.Name, err).
			WithDetails(map[string]any{"server": t.srv.cfg.Name})
	}
	out, err := resultOutput(res, t.srv.opts.MaxResultBytes)
	if err == nil && !res.IsError {
		var structured json.RawMessage
		if res.StructuredContent != nil {
			structured = out // resultOutput's output is the structuredContent
		}
		if err = t.checkStructured(structured); err != nil {
			out = nil
		}
	}
	return toolgate.Result{Output: out, Duration: time.Since(started)}, err
}

// resultOutput maps an MCP tool result onto the gateway's: isError is a
// *toolgate.Error of code TOOL_ERROR (message: the text content; details:
// content and structured_content); otherwise the output is the
// structuredContent when there is one, else the text when every content
// item is text (items joined by newlines, as one JSON string), else null
// when there is no content, else the content array.
func resultOutput(res *mcp.CallToolResult, maxBytes int) (json.RawMessage, error) {
	if res.IsError {
		msg := cut(strings.TrimSpace(textOf(res.Content)), maxErrorMessage)
		if msg == "" {
			msg = "the MCP tool reported an error"
		}
		details := map[string]any{}
		budget := maxBytes
		if c, err := marshalJSON(res.Content); err == nil && len(c) <= budget {
			details["content"] = c
			budget -= len(c)
		}
		if res.StructuredContent != nil {
			if sc, err := marshalJSON(res.StructuredContent); err == nil && len(sc) <= budget {
				details["structured_content"] = sc
			}
		}
		return nil, toolgate.Errorf(CodeToolError, "%s", msg).WithDetails(details)
	}
	var out json.RawMessage
	var err error
	switch {
	case res.StructuredContent != nil:
		out, err = marshalJSON(res.StructuredContent)
	case len(res.Content) == 0:
		out = json.RawMessage("null")
	case allText(res.Content):
		out, err = marshalJSON(textOf(res.Content))
	default:
		out, err = marshalJSON(res.Content)
	}
	if err != nil {
		return nil, toolgate.Errorf(toolgate.EInternal, "the MCP tool's result could not be read as JSON: %v", err)
	}
	if len(out) > maxBytes {
		return nil, toolgate.Errorf(toolgate.EPayloadTooLarge, "the MCP tool's result is %d bytes of JSON; the gateway takes at most %d", len(out), maxBytes)
	}
	return out, nil
}

// allText reports whether every content item is text.
func allText(content []mcp.Content) bool {
	for _, c := range content {
		if _, ok := c.(*mcp.TextContent); !ok {
			return false
		}
	}
	return true
}

// textOf joins the text items of content with newlines.
func textOf(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// marshalJSON encodes v without escaping <, > and & (the output is JSON
// for programs and models, not HTML).
func marshalJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// cut shortens s to at most n characters, marking the cut.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
