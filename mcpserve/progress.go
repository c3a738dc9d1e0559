package mcpserve

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressForwarder returns what passes a call's progress reports on to
// the host as notifications/progress, or nil when the request carried no
// progress token. A client's report is any JSON value; it maps as:
//
//   - an object with a number "current" (or "progress"): that number is
//     the progress, a number "total" the total, a string "message" the
//     message (the shape the client SDKs send);
//   - a number: the progress;
//   - anything else: the progress is the report's rank (1, 2, 3, ...) and
//     the message is the report (a string as itself, else its JSON).
//
// MCP requires the progress to increase: a report that would not is not
// passed on. The report itself is in the notification's _meta under
// "io.toolgate/progress".
func progressForwarder(ctx context.Context, req *mcp.CallToolRequest) func(json.RawMessage) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	var (
		reports int
		last    float64
	)
	return func(report json.RawMessage) {
		reports++
		params := progressParams(report, reports)
		if reports > 1 && params.Progress <= last {
			return
		}
		last = params.Progress
		params.ProgressToken = token
		params.Meta = mcp.Meta{MetaProgress: report}
		// The request's context routes it to the request's own stream.
		_ = req.Session.NotifyProgress(ctx, params)
	}
}

// progressParams maps one report (see progressForwarder); rank is its
// place among the call's reports, from 1.
func progressParams(report json.RawMessage, rank int) *mcp.ProgressNotificationParams {
	var shaped struct {
		Current  *float64 `json:"current"`
		Progress *float64 `json:"progress"`
		Total    *float64 `json:"total"`
		Message  *string  `json:"message"`
	}
	if isJSONObject(report) && json.Unmarshal(report, &shaped) == nil {
		current := shaped.Current
		if current == nil {
			current = shaped.Progress
		}
		if current != nil {
			p := &mcp.ProgressNotificationParams{Progress: *current}
			if shaped.Total != nil {
				p.Total = *shaped.Total
			}
			if shaped.Message != nil {
				p.Message = *shaped.Message
			}
			return p
		}
	}
	var number float64
	if json.Unmarshal(report, &number) == nil {
		return &mcp.ProgressNotificationParams{Progress: number}
	}
	return &mcp.ProgressNotificationParams{Progress: float64(rank), Message: outputText(report)}
}
