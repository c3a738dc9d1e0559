package doctest

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// do sends a request with a bearer secret and decodes the JSON answer into
// out; it fails the test unless the status is want.
func (g *gateway) do(t *testing.T, method, path, secret, body string, want int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, g.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := readAllClose(resp)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(data), out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, data)
		}
	}
}

// TestGuideCost: the tool of docs/guides/agents.md's Cost section registers
// as it stands, a call of it keeps its estimate, and the guide's curl that
// reports a cost is taken: the call record shows both.
func TestGuideCost(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	g := startGateway(t, "")
	tool := markedBlock(t, "docs/guides/agents.md", "TestGuideCost registers this tool", "json")
	var sess struct {
		SessionID string `json:"session_id"`
		Token     string `json:"token"`
	}
	g.do(t, "POST", "/v1/sessions", "", `{"client": {"name": "cost-demo", "platform": "desktop"}}`, 201, &sess)
	var registered struct {
		Registered int `json:"registered"`
	}
	g.do(t, "POST", "/v1/sessions/"+sess.SessionID+"/tools", sess.Token, `{"type": "register_tools", "tools": [`+tool+`]}`, 200, &registered)
	if registered.Registered != 1 {
		t.Fatalf("the guide's tool was not registered: %+v", registered)
	}
	var call struct {
		ID string `json:"id"`
	}
	g.do(t, "POST", "/v1/calls", g.key, `{"session_id": "`+sess.SessionID+`", "tool": "web_search", "args": {"q": "toolgate"}, "wait": false}`, 202, &call)

	report := markedBlock(t, "docs/guides/agents.md", "TestGuideCost runs this block", "sh")
	env := append(withoutToolgateEnv(os.Environ()), "TOOLGATE="+g.url, "SID="+sess.SessionID, "TOKEN="+sess.Token, "CALL="+call.ID)
	out := runBlock(t, t.TempDir(), report, env)
	if strings.Contains(out, `"error"`) {
		t.Fatalf("the guide's cost report was refused: %s", out)
	}
	var rec struct {
		Status        string   `json:"status"`
		EstimatedCost *float64 `json:"estimated_cost"`
		Cost          *float64 `json:"cost"`
	}
	g.do(t, "GET", "/v1/calls/"+call.ID, g.key, "", 200, &rec)
	if rec.Status != "completed" || rec.EstimatedCost == nil || *rec.EstimatedCost != 0.5 || rec.Cost == nil || *rec.Cost != 0.42 {
		t.Fatalf("the call after the guide's report: %+v (estimated %v, cost %v)", rec, deref(rec.EstimatedCost), deref(rec.Cost))
	}
}

// deref returns *f, or -1 for nil, for messages.
func deref(f *float64) float64 {
	if f == nil {
		return -1
	}
	return *f
}
