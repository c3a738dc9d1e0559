package mcpserve

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// MetaFindings, on a result, lists the injection attempts the gateway's
// safety step found in the output ([{pattern, path, excerpt}]).
const MetaFindings = metaKey + "findings"

// OutputGuard is the safety step a call's end passes before the host
// hands it to its model: when Options.Guard is set (the server sets it),
// every tools/call result passes it. The call record keeps the raw
// output; only the result sent to the host is changed.
type OutputGuard interface {
	// GuardCallResult returns the ended call as the host may see it: its
	// output, or its error's message and details, redacted, and a notice
	// when it holds text that tries to pass as instructions.
	GuardCallResult(ctx context.Context, c *toolgate.Call) GuardedCall
	// ProgressGuard returns what a progress report of a call of tool (in
	// session sid, "" for none) passes before the host sees it: redacted
	// as the tool's output would be; nothing is flagged (a host shows
	// progress to people).
	ProgressGuard(ctx context.Context, sid, tool string) func(report json.RawMessage) json.RawMessage
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
	g := e.outputs
	if g == nil {
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

// guardedProgress wraps forward (a progressForwarder, nil when the host
// asked for no progress) so that each report passes the engine's
// OutputGuard, when it has one, before the host sees it. The guard is
// made at the first report: most calls report none.
func (e *Endpoint) guardedProgress(ctx context.Context, sid, tool string, forward func(json.RawMessage)) func(json.RawMessage) {
	g := e.outputs
	if g == nil || forward == nil {
		return forward
	}
	guard := sync.OnceValue(func() func(json.RawMessage) json.RawMessage {
		return g.ProgressGuard(context.WithoutCancel(ctx), sid, tool)
	})
	return func(report json.RawMessage) { forward(guard()(report)) }
}
