package agentloop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

func TestNeedsApproval(t *testing.T) {
	cases := []struct {
		req  toolgate.Approval
		auto bool
		want bool
	}{
		{toolgate.ApprovalNever, false, false},
		{toolgate.ApprovalNever, true, false},
		{toolgate.ApprovalUnlessAutoApproved, false, true},
		{toolgate.ApprovalUnlessAutoApproved, true, false},
		{toolgate.ApprovalAlways, false, true},
		{toolgate.ApprovalAlways, true, true},
		{"", false, false},
	}
	for _, c := range cases {
		if got := NeedsApproval(c.req, c.auto); got != c.want {
			t.Errorf("NeedsApproval(%q, %v) = %v", c.req, c.auto, got)
		}
	}
}

func TestCheckRateLimit(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	cases := []struct {
		name   string
		rl     *toolgate.RateLimit
		recent []time.Time
		retry  int // 0: allowed
		window string
	}{
		{"no limit", nil, []time.Time{ago(time.Second)}, 0, ""},
		{"under the minute limit", &toolgate.RateLimit{RequestsPerMinute: 2}, []time.Time{ago(10 * time.Second)}, 0, ""},
		{"old calls do not count", &toolgate.RateLimit{RequestsPerMinute: 1}, []time.Time{ago(61 * time.Second)}, 0, ""},
		// Two calls, 50 s and 20 s ago: the older leaves the window in 10 s.
		{"at the minute limit", &toolgate.RateLimit{RequestsPerMinute: 2}, []time.Time{ago(50 * time.Second), ago(20 * time.Second)}, 10, "minute"},
		// Over the limit (three in the window): the second-newest must leave, 40 s on.
		{"past the minute limit", &toolgate.RateLimit{RequestsPerMinute: 2}, []time.Time{ago(50 * time.Second), ago(20 * time.Second), ago(10 * time.Second)}, 40, "minute"},
		{"the hour decides", &toolgate.RateLimit{RequestsPerMinute: 5, RequestsPerHour: 2}, []time.Time{ago(30 * time.Minute), ago(10 * time.Minute)}, 1800, "hour"},
		{"a sub-second wait rounds up", &toolgate.RateLimit{RequestsPerMinute: 1}, []time.Time{ago(59*time.Second + 900*time.Millisecond)}, 1, "minute"},
	}
	for _, c := range cases {
		err := CheckRateLimit("send_sms", c.rl, c.recent, now)
		if c.retry == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		te, ok := err.(*toolgate.Error)
		if !ok || te.Code != toolgate.ERateLimited || te.RetryAfterSeconds != c.retry || te.Details["window"] != c.window {
			t.Errorf("%s: %#v, want retry %d per %s", c.name, err, c.retry, c.window)
		}
	}
}

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
	call := ToolCall{ID: "t1", Type: "function", Function: FunctionCall{Name: "echo", Arguments: "{}"}}
	ok := [][]Message{
		{{Role: RoleUser, Content: "hi"}},
		{{Role: RoleSystem, Content: "be brief"}, {Role: RoleUser, Content: "hi"}, {Role: RoleAssistant, ToolCalls: []ToolCall{call}}, {Role: RoleTool, ToolCallID: "t1", Content: "x"}},
	}
	for _, msgs := range ok {
		if err := CheckMessages(msgs); err != nil {
			t.Errorf("CheckMessages(%v) = %v", msgs, err)
		}
	}
	bad := map[string][]Message{
		"empty":              nil,
		"unknown role":       {{Role: "narrator"}},
		"tool calls on user": {{Role: RoleUser, ToolCalls: []ToolCall{call}}},
		"orphan tool":        {{Role: RoleUser}, {Role: RoleTool, ToolCallID: "t9"}},
		"unanswered":         {{Role: RoleUser}, {Role: RoleAssistant, ToolCalls: []ToolCall{call}}},
		"nameless call":      {{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "x"}}}},
	}
	for name, msgs := range bad {
		if err := CheckMessages(msgs); toolgate.ErrorCode(err) != toolgate.EBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestToolMessage(t *testing.T) {
	if m := ToolMessage("c", "echo", json.RawMessage(`"plain text"`), nil); m.Content != "plain text" || m.Role != RoleTool || m.ToolCallID != "c" {
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
	calls := []ToolCall{{ID: "a"}, {ID: ""}, {ID: "a"}, {ID: "b"}}
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
