package mobile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// weatherSchema is the output schema of the tool the presentation tests
// register: {"celsius": number}, required.
const weatherSchema = `{"type":"object","properties":{"celsius":{"type":"number"}},"required":["celsius"]}`

// bearer adds the agent key to an MCP host's requests.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestToolPresentationReachesHosts: a tool registered by the Go SDK with
// a title, annotations and an output schema keeps them in GET /api/tools
// and on /mcp (as title, annotations and outputSchema); a call whose
// output matches the schema reaches the host as structuredContent, one
// whose output does not is an isError result of code OUTPUT_INVALID, and
// the call record keeps the output as the client gave it.
func TestToolPresentationReachesHosts(t *testing.T) {
	g := gatewaytest.Start(t)
	client, states := newClient(t, g.URL, nil)
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		if strings.Contains(call.ArgsJSON(), "wrong") {
			return `{"celsius":"warm"}`, nil
		}
		return `{"celsius":21.5}`, nil
	}))
	opts := mobile.NewToolOptions()
	opts.Title = "Weather here"
	opts.OutputSchemaJSON = weatherSchema
	opts.AnnotationsJSON = `{"title":"Weather","destructive_hint":false,"open_world_hint":true}`
	opts.ReadOnly = true
	if err := client.RegisterToolWithOptions("weather", "The temperature where the phone is.", "", opts); err != nil {
		t.Fatal(err)
	}
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	states.waitFor(t, "connected sse", 15*time.Second)
	sid := client.SessionID()

	info := sessionTools(t, g, sid)["weather"]
	if info.Title != "Weather here" || info.Annotations == nil || info.Annotations.Title != "Weather" ||
		info.Annotations.DestructiveHint == nil || *info.Annotations.DestructiveHint || info.Annotations.OpenWorldHint == nil ||
		!gatewaytest.SameJSON(info.OutputSchema, []byte(weatherSchema)) {
		t.Fatalf("GET /api/tools lists %+v (annotations %+v, output_schema %s)", info, info.Annotations, info.OutputSchema)
	}

	host := mcp.NewClient(&mcp.Implementation{Name: "presentation-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := host.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp/sessions/" + sid,
		HTTPClient: &http.Client{Transport: bearer{g.AgentKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tool *mcp.Tool
	for _, x := range listed.Tools {
		if x.Name == "weather" {
			tool = x
		}
	}
	if tool == nil {
		t.Fatalf("weather not listed on /mcp/sessions/%s: %+v", sid, listed.Tools)
	}
	schema, _ := json.Marshal(tool.OutputSchema)
	if tool.Title != "Weather here" || !gatewaytest.SameJSON(schema, []byte(weatherSchema)) || tool.Annotations == nil ||
		tool.Annotations.Title != "Weather" || !tool.Annotations.ReadOnlyHint || tool.Annotations.DestructiveHint == nil ||
		*tool.Annotations.DestructiveHint || tool.Annotations.OpenWorldHint == nil || !*tool.Annotations.OpenWorldHint {
		t.Fatalf("/mcp lists title %q, outputSchema %s, annotations %+v", tool.Title, schema, tool.Annotations)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	if res.IsError || string(structured) != `{"celsius":21.5}` {
		t.Fatalf("the matching call: isError %v, structuredContent %s, content %+v", res.IsError, structured, res.Content)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"wrong": true}})
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if !res.IsError || !strings.HasPrefix(text, toolgate.EOutputInvalid+": ") || !strings.Contains(text, "celsius") {
		t.Fatalf("the mismatching call: isError %v, content %q", res.IsError, text)
	}
	id, _ := res.Meta[mcpMetaCallID].(string)
	if rec := getCall(t, g, id, 0); rec.Status != toolgate.StatusCompleted || string(rec.Output) != `{"celsius":"warm"}` {
		t.Fatalf("the call record of the mismatching call: %+v output %s", rec, rec.Output)
	}
}

// tokenRequest is agentRequest with token (none when empty) in place of
// the agent key.
func tokenRequest(t *testing.T, g *gatewaytest.Gateway, token, method, path string, body, out any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, g.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
	}
	return resp.StatusCode
}

// mcpMetaCallID is the _meta key of a tools/call result's call id
// (mcpserve.MetaCallID).
const mcpMetaCallID = "io.toolgate/call_id"

// TestToolPresentationRefused: a registration whose output schema is too
// deep, not an object schema or does not compile, or whose annotations
// have the wrong types, is refused with BAD_REQUEST naming the field, and
// nothing is registered.
func TestToolPresentationRefused(t *testing.T) {
	g := gatewaytest.Start(t)
	var created struct {
		SessionID string `json:"session_id"`
		Token     string `json:"token"`
	}
	body := map[string]any{"client": map[string]any{"name": "presentation-test"}}
	if status := tokenRequest(t, g, "", http.MethodPost, "/v1/sessions", body, &created); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("POST /v1/sessions: %d", status)
	}
	deep := `{"type":"object"}`
	for range 40 { // 81 levels: past the schema's 64, within what a body may nest
		deep = `{"type":"object","properties":{"a":` + deep + `}}`
	}
	huge := `{"type":"object","description":"` + strings.Repeat("x", 70<<10) + `"}`
	cases := map[string]struct{ tool, want string }{
		"deep":          {`{"name":"t","description":"d","output_schema":` + deep + `}`, "output_schema nests objects and arrays deeper than 64 levels"},
		"huge":          {`{"name":"t","description":"d","output_schema":` + huge + `}`, "output_schema is 7"},
		"not an object": {`{"name":"t","description":"d","output_schema":{"type":"string"}}`, `output_schema must have the top-level "type": "object"`},
		"no compile":    {`{"name":"t","description":"d","output_schema":{"type":"object","properties":{"a":{"type":"wat"}}}}`, "output_schema: "},
		"long title":    {`{"name":"t","description":"d","title":"` + strings.Repeat("t", 300) + `"}`, "title is 300 characters; the limit is 256"},
		"bad icons":     {`{"name":"t","description":"d","icons":[{"src":"javascript:alert(1)"}]}`, "icons[0].src must be an https: or data: URI"},
	}
	for name, c := range cases {
		// A rejection of the tool, or (a body too deep for the gateway to
		// read) of the whole body.
		var reply struct {
			toolgate.ToolsRegistered
			Error *toolgate.Error `json:"error"`
		}
		raw := json.RawMessage(`{"tools":[` + c.tool + `]}`)
		status := tokenRequest(t, g, created.Token, http.MethodPost, "/v1/sessions/"+created.SessionID+"/tools", raw, &reply)
		rejected := status == http.StatusOK && len(reply.Rejected) == 1 && reply.Rejected[0].Code == toolgate.EBadRequest &&
			strings.Contains(reply.Rejected[0].Message, c.want)
		refused := status == http.StatusBadRequest && reply.Error != nil && strings.Contains(reply.Error.Message, c.want)
		if !rejected && !refused {
			t.Errorf("%s: status %d, reply %+v (error %+v), want a rejection saying %q", name, status, reply.ToolsRegistered, reply.Error, c.want)
		}
	}
	// Annotations of the wrong types: the body is refused as a whole.
	var e struct {
		Error toolgate.Error `json:"error"`
	}
	raw := json.RawMessage(`{"tools":[{"name":"t","description":"d","annotations":{"destructive_hint":"yes"}}]}`)
	if status := tokenRequest(t, g, created.Token, http.MethodPost, "/v1/sessions/"+created.SessionID+"/tools", raw, &e); status != http.StatusBadRequest ||
		!strings.Contains(e.Error.Message, "destructive_hint") {
		t.Errorf("annotations of the wrong type: %d %+v", status, e)
	}
	if tools := sessionTools(t, g, created.SessionID); len(tools) != 0 {
		t.Errorf("refused registrations left tools: %+v", tools)
	}
}
