package mcpserve

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

func TestProgressParams(t *testing.T) {
	cases := []struct {
		report string
		rank   int
		want   mcp.ProgressNotificationParams
	}{
		{`{"current":3,"total":10,"message":"reading"}`, 1, mcp.ProgressNotificationParams{Progress: 3, Total: 10, Message: "reading"}},
		{`{"progress":0.5}`, 1, mcp.ProgressNotificationParams{Progress: 0.5}},
		{`42`, 2, mcp.ProgressNotificationParams{Progress: 42}},
		{`"halfway"`, 3, mcp.ProgressNotificationParams{Progress: 3, Message: "halfway"}},
		{`{"stage":"upload"}`, 4, mcp.ProgressNotificationParams{Progress: 4, Message: `{"stage":"upload"}`}},
		{`{"current":"three"}`, 5, mcp.ProgressNotificationParams{Progress: 5, Message: `{"current":"three"}`}},
	}
	for _, c := range cases {
		got := progressParams(json.RawMessage(c.report), c.rank)
		if got.Progress != c.want.Progress || got.Total != c.want.Total || got.Message != c.want.Message {
			t.Errorf("%s: %+v, want %+v", c.report, *got, c.want)
		}
	}
}

func TestResultOf(t *testing.T) {
	text := func(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }
	encoded := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}

	str := resultOf(&toolgate.Call{ID: "c1", Status: toolgate.StatusCompleted, Output: json.RawMessage(`"plain text"`)})
	if str.IsError || text(str) != "plain text" || str.StructuredContent != nil || str.Meta[MetaCallID] != "c1" {
		t.Errorf("a string output: %+v", str)
	}
	obj := resultOf(&toolgate.Call{ID: "c2", Status: toolgate.StatusCompleted, Output: json.RawMessage(`{ "a": [1, 2] }`)})
	if text(obj) != `{"a":[1,2]}` || encoded(obj.StructuredContent) != `{"a":[1,2]}` {
		t.Errorf("an object output: %q %s", text(obj), encoded(obj.StructuredContent))
	}
	arr := resultOf(&toolgate.Call{ID: "c3", Status: toolgate.StatusCompleted, Output: json.RawMessage(`[1]`)})
	if text(arr) != `[1]` || arr.StructuredContent != nil {
		t.Errorf("an array output: %+v", arr)
	}
	timedOut := resultOf(&toolgate.Call{ID: "c4", Status: toolgate.StatusTimedOut,
		Error: &toolgate.CallError{Code: "TIMEOUT", Message: "no answer within 30s"}})
	if !timedOut.IsError || text(timedOut) != "TIMEOUT: no answer within 30s" ||
		encoded(timedOut.StructuredContent) != `{"error":{"code":"TIMEOUT","message":"no answer within 30s"}}` || timedOut.Meta[MetaStatus] != "timed_out" {
		t.Errorf("a timed-out call: %+v", timedOut)
	}

	refused, err := refusal(toolgate.Errorf(toolgate.ERateLimited, "slow down").WithDetails(map[string]any{"retry_after_ms": 500}))
	if err != nil || !refused.IsError || text(refused) != "RATE_LIMITED: slow down" ||
		encoded(refused.StructuredContent) != `{"error":{"code":"RATE_LIMITED","message":"slow down","details":{"retry_after_ms":500}}}` {
		t.Errorf("a refusal: %+v %v", refused, err)
	}
	if _, err := refusal(toolgate.Errorf(toolgate.EToolNotFound, "gone")); err == nil {
		t.Error("a tool that is gone: no JSON-RPC error")
	}
}

func TestInputSchema(t *testing.T) {
	cases := []struct{ in, out string }{
		{``, `{"type":"object"}`},
		{`{"type":"object","properties":{}}`, `{"type":"object","properties":{}}`},
		{`{"properties":{"a":{}}}`, `{"type":"object","allOf":[{"properties":{"a":{}}}]}`},
		{`{"type":"string"}`, ``},
		{`[1]`, ``},
	}
	for _, c := range cases {
		got, err := inputSchema(json.RawMessage(c.in))
		if (err != nil) != (c.out == "") || string(got) != c.out {
			t.Errorf("%s: %s %v, want %s", c.in, got, err, c.out)
		}
	}
}

func TestOriginPolicy(t *testing.T) {
	p := newOriginPolicy([]string{"https://app.example", "https://*.tools.example"})
	cases := []struct {
		origin, host string
		ok           bool
	}{
		{"", "gw:8080", true},
		{"http://gw:8080", "gw:8080", true},
		{"http://gw:9090", "gw:8080", false},
		{"https://app.example", "gw:8080", true},
		{"https://a.tools.example", "gw:8080", true},
		{"https://tools.example", "gw:8080", false},
		{"https://evil.example", "gw:8080", false},
		{"null", "gw:8080", false},
	}
	for _, c := range cases {
		r, _ := http.NewRequest("POST", "http://"+c.host+"/mcp", nil)
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if got := p.allows(r); got != c.ok {
			t.Errorf("Origin %q on %s: %v, want %v", c.origin, c.host, got, c.ok)
		}
	}
	if r, _ := http.NewRequest("POST", "http://gw/mcp", nil); !newOriginPolicy([]string{"*"}).allows(withOrigin(r, "https://any.example")) {
		t.Error(`"*" does not allow any origin`)
	}
}

func withOrigin(r *http.Request, origin string) *http.Request {
	r.Header.Set("Origin", origin)
	return r
}
