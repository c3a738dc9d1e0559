package mcpserve

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// resultOf maps an ended call: completed gives its output as content and,
// when the output is a JSON object, as structuredContent; any other end
// gives isError with "CODE: message" and {"error": {code, message,
// details}}. The content is the output itself when it is a list of MCP
// content blocks (contentBlocks: what an imported tool's image, audio,
// resource link or embedded resource result is stored as), else one text
// block: a string as itself, anything else as compact JSON. The call's
// output has passed the safety step first (safety.go).
func resultOf(c *toolgate.Call) *mcp.CallToolResult {
	meta := mcp.Meta{MetaCallID: c.ID, MetaStatus: string(c.Status)}
	if c.Status != toolgate.StatusCompleted {
		callErr := toolgate.CallError{Code: strings.ToUpper(string(c.Status)), Message: "the call ended " + string(c.Status)}
		if c.Error != nil {
			callErr = *c.Error
		}
		return errorResult(callErr, meta)
	}
	output := c.Output
	if len(output) == 0 {
		output = json.RawMessage("null")
	}
	if blocks := contentBlocks(output); blocks != nil {
		return &mcp.CallToolResult{Meta: meta, Content: blocks}
	}
	res := &mcp.CallToolResult{Meta: meta, Content: []mcp.Content{&mcp.TextContent{Text: outputText(output)}}}
	if isJSONObject(output) {
		res.StructuredContent = output
	}
	return res
}

// errorResult is the isError result of a call that did not complete.
func errorResult(e toolgate.CallError, meta mcp.Meta) *mcp.CallToolResult {
	text := e.Code + ": " + e.Message
	return &mcp.CallToolResult{
		Meta:              meta,
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: map[string]toolgate.CallError{"error": e},
	}
}

// contentBlocks returns output as MCP content blocks when it is a
// non-empty JSON array of them, each whole: text with its text; image
// and audio with base64 data and a mimeType; resource_link with a uri
// and a name; resource with its contents' uri. Anything else (an array of
// other values, a block missing a part, a type a tool result may not
// carry) gives nil, and the output goes as text.
func contentBlocks(output json.RawMessage) []mcp.Content {
	trimmed := bytes.TrimLeft(output, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil
	}
	// The SDK's own decoding of a tool result's content: it knows the
	// block types and refuses the others.
	wrapped := make([]byte, 0, len(output)+16)
	wrapped = append(wrapped, `{"content":`...)
	wrapped = append(wrapped, output...)
	wrapped = append(wrapped, '}')
	var res mcp.CallToolResult
	if err := json.Unmarshal(wrapped, &res); err != nil || len(res.Content) == 0 {
		return nil
	}
	for _, c := range res.Content {
		if !wholeBlock(c) {
			return nil
		}
	}
	return res.Content
}

// wholeBlock reports whether a decoded content block has the parts MCP
// requires of its type.
func wholeBlock(c mcp.Content) bool {
	switch b := c.(type) {
	case *mcp.TextContent:
		return true
	case *mcp.ImageContent:
		return len(b.Data) > 0 && b.MIMEType != ""
	case *mcp.AudioContent:
		return len(b.Data) > 0 && b.MIMEType != ""
	case *mcp.ResourceLink:
		return b.URI != "" && b.Name != ""
	case *mcp.EmbeddedResource:
		return b.Resource != nil && b.Resource.URI != ""
	}
	return false
}

// outputText is an output as text: a JSON string as its value, anything
// else as compact JSON.
func outputText(output json.RawMessage) string {
	var s string
	if json.Unmarshal(output, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, output); err != nil {
		return string(output)
	}
	return buf.String()
}

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
