package agentloop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate"
)

// Definition is a tool as the model is shown it.
type Definition struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Model is a chat model with tool calling: given the conversation and the
// tools, it returns its next message (text, tool calls, or both).
type Model interface {
	Complete(ctx context.Context, messages []toolgate.ChatMessage, tools []Definition) (toolgate.ChatMessage, error)
	// Name is the model's name, recorded on each run.
	Name() string
}

// CheckMessages validates a conversation given as a run's input: known
// roles, a tool message answering a call the assistant made before it, and
// at least one message.
func CheckMessages(msgs []toolgate.ChatMessage) error {
	if len(msgs) == 0 {
		return toolgate.Errorf(toolgate.EBadRequest, "a run needs input or at least one message")
	}
	open := map[string]bool{}
	for i, m := range msgs {
		if !slices.Contains([]string{toolgate.RoleSystem, toolgate.RoleUser, toolgate.RoleAssistant, toolgate.RoleTool}, m.Role) {
			return toolgate.Errorf(toolgate.EBadRequest, "messages[%d].role must be system, user, assistant or tool", i)
		}
		for _, tc := range m.ToolCalls {
			if m.Role != toolgate.RoleAssistant {
				return toolgate.Errorf(toolgate.EBadRequest, "messages[%d]: only an assistant message has tool_calls", i)
			}
			if tc.ID == "" || tc.Function.Name == "" {
				return toolgate.Errorf(toolgate.EBadRequest, "messages[%d].tool_calls need an id and a function name", i)
			}
			open[tc.ID] = true
		}
		if m.Role == toolgate.RoleTool {
			if !open[m.ToolCallID] {
				return toolgate.Errorf(toolgate.EBadRequest, "messages[%d].tool_call_id %q answers no earlier tool call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 {
		return toolgate.Errorf(toolgate.EBadRequest, "the messages leave %d tool calls unanswered; answer them with tool messages", len(open))
	}
	return nil
}

// ToolMessage is the tool message that reports a call's outcome to the
// model: the output as it is (a JSON string as its text), or the error as
// {"error": {"code", "message", "resolution_hint"?, "details"?}} so the
// model can tell the user what to do (AUTH_REQUIRED's hint above all).
func ToolMessage(toolCallID, name string, output json.RawMessage, err error) toolgate.ChatMessage {
	m := toolgate.ChatMessage{Role: toolgate.RoleTool, ToolCallID: toolCallID, Name: name}
	if err == nil {
		var s string
		if json.Unmarshal(output, &s) == nil {
			m.Content = s
		} else {
			m.Content = string(output)
		}
		return m
	}
	e := map[string]any{"code": toolgate.ErrorCode(err), "message": toolgate.ErrorMessage(err)}
	if te, ok := err.(*toolgate.Error); ok && len(te.Details) > 0 {
		if hint, ok := te.Details["resolution_hint"]; ok {
			e["resolution_hint"] = hint
		}
		e["details"] = te.Details
	}
	b, jerr := json.Marshal(map[string]any{"error": e})
	if jerr != nil {
		b = []byte(fmt.Sprintf(`{"error":{"code":%q}}`, toolgate.ErrorCode(err)))
	}
	m.Content = string(b)
	return m
}
