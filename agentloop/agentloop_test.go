package agentloop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

func TestReflectSchema(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(ReflectSchema[CallHistoryArgs](), &schema); err != nil {
		t.Fatal(err)
	}
	props, _ := schema["properties"].(map[string]any)
	limit, _ := props["limit"].(map[string]any)
	if schema["type"] != "object" || limit["maximum"] != 50.0 || schema["$schema"] != nil || schema["$ref"] != nil || schema["additionalProperties"] != false {
		t.Fatalf("schema = %v", schema)
	}
	if _, ok := schema["required"]; ok {
		t.Fatalf("optional fields marked required: %v", schema["required"])
	}
}

func TestCheckMessages(t *testing.T) {
	call := toolgate.ChatToolCall{ID: "t1", Type: "function", Function: toolgate.ChatFunctionCall{Name: "echo", Arguments: "{}"}}
	ok := [][]toolgate.ChatMessage{
		{{Role: toolgate.RoleUser, Content: "hi"}},
		{{Role: toolgate.RoleSystem, Content: "be brief"}, {Role: toolgate.RoleUser, Content: "hi"}, {Role: toolgate.RoleAssistant, ToolCalls: []toolgate.ChatToolCall{call}}, {Role: toolgate.RoleTool, ToolCallID: "t1", Content: "x"}},
	}
	for _, msgs := range ok {
		if err := CheckMessages(msgs); err != nil {
			t.Errorf("CheckMessages(%v) = %v", msgs, err)
		}
	}
	bad := map[string][]toolgate.ChatMessage{
		"empty":              nil,
		"unknown role":       {{Role: "narrator"}},
		"tool calls on user": {{Role: toolgate.RoleUser, ToolCalls: []toolgate.ChatToolCall{call}}},
		"orphan tool":        {{Role: toolgate.RoleUser}, {Role: toolgate.RoleTool, ToolCallID: "t9"}},
		"unanswered":         {{Role: toolgate.RoleUser}, {Role: toolgate.RoleAssistant, ToolCalls: []toolgate.ChatToolCall{call}}},
		"nameless call":      {{Role: toolgate.RoleAssistant, ToolCalls: []toolgate.ChatToolCall{{ID: "x"}}}},
	}
	for name, msgs := range bad {
		if err := CheckMessages(msgs); toolgate.ErrorCode(err) != toolgate.EBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestToolMessage(t *testing.T) {
	if m := ToolMessage("c", "echo", json.RawMessage(`"plain text"`), nil); m.Content != "plain text" || m.Role != toolgate.RoleTool || m.ToolCallID != "c" {
		t.Fatalf("string output = %+v", m)
	}
	if m := ToolMessage("c", "echo", json.RawMessage(`{"a":1}`), nil); m.Content != `{"a":1}` {
		t.Fatalf("object output = %+v", m)
	}
	err := toolgate.Errorf(toolgate.EAuthRequired, "Camera permission denied").WithDetails(map[string]any{"resolution_hint": "Allow the camera"})
	m := ToolMessage("c", "camera", nil, err)
	for _, want := range []string{`"code":"AUTH_REQUIRED"`, `"message":"Camera permission denied"`, `"resolution_hint":"Allow the camera"`} {
		if !strings.Contains(m.Content, want) {
			t.Errorf("error message %s lacks %s", m.Content, want)
		}
	}
}

func TestNameToolCalls(t *testing.T) {
	calls := []toolgate.ChatToolCall{{ID: "a"}, {ID: ""}, {ID: "a"}, {ID: "b"}}
	nameToolCalls(calls, 3)
	var ids []string
	for _, c := range calls {
		ids = append(ids, c.ID)
		if c.Type != "function" {
			t.Fatalf("type = %q", c.Type)
		}
	}
	if strings.Join(ids, ",") != "a,call_3_1,call_3_2,b" {
		t.Fatalf("ids = %v", ids)
	}
}
