package mcpserve

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// MetaFindings, on a result, lists the injection attempts the gateway's
// safety step found in the output ([{pattern, path, excerpt}]).
const MetaFindings = metaKey + "findings"

// OutputGuard is the safety step a call's end passes before the host
// hands it to its model: an Engine that implements it (the server's does)
// has every tools/call result pass it. The call record keeps the raw
// output; only the result sent to the host is changed.
type OutputGuard interface {
	// GuardCallResult returns the ended call as the host may see it: its
	// output, or its error's message and details, redacted, and a notice
	// when it holds text that tries to pass as instructions.
	GuardCallResult(ctx context.Context, c *toolgate.Call) GuardedCall
}

// GuardedCall is an ended call after the safety step.
type GuardedCall struct {
	Call *toolgate.Call
	// Notice, when the output was flagged, is put before the output in
	// the result's content, so that the model reads it first.
	Notice   string
	Findings json.RawMessage // for MetaFindings
}

// guardedResultOf maps an ended call through the engine's OutputGuard,
// when it has one.
func (e *Endpoint) guardedResultOf(ctx context.Context, c *toolgate.Call) *mcp.CallToolResult {
	g, ok := e.engine.(OutputGuard)
	if !ok {
		return resultOf(c)
	}
	gc := g.GuardCallResult(context.WithoutCancel(ctx), c)
	res := resultOf(gc.Call)
	if gc.Notice != "" {
		res.Content = append([]mcp.Content{&mcp.TextContent{Text: gc.Notice}}, res.Content...)
		if len(gc.Findings) > 0 {
			res.Meta[MetaFindings] = gc.Findings
		}
	}
	return res
}
