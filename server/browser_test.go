package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/server"
)

// hostRequest sends a GET of path with the Host header host and returns
// the status.
func hostRequest(t *testing.T, g *gateway, path, host string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", g.URL+path, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHostCheckedByTheGateway: a page on evil.example whose name is made to
// resolve to the gateway (DNS rebinding) is refused; the gateway's own
// address and localhost pass, and so does a name in AllowedHosts.
func TestHostCheckedByTheGateway(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.AllowedHosts = []string{"gw.example.com"} })
	port := strings.TrimPrefix(g.URL[strings.LastIndex(g.URL, ":"):], ":")
	for host, want := range map[string]int{
		"evil.example:" + port:   421,
		"evil.example":           421,
		"127.0.0.1:" + port:      200,
		"localhost:" + port:      200,
		"gw.example.com:" + port: 200,
	} {
		if got := hostRequest(t, g, "/healthz", host); got != want {
			t.Errorf("Host: %s answered %d, want %d", host, got, want)
		}
	}
}

// TestTextPlainCreatesNoSession: a page on any site could create a session
// with a plain text/plain POST, which needs no CORS preflight; it is now
// refused with 415 and creates nothing.
func TestTextPlainCreatesNoSession(t *testing.T) {
	g := startGateway(t, nil)
	for _, contentType := range []string{"text/plain", ""} {
		req, _ := http.NewRequest("POST", g.URL+"/v1/sessions", strings.NewReader(`{"client":{"name":"cross-site"}}`))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 415 || !strings.Contains(string(body), "UNSUPPORTED_MEDIA_TYPE") {
			t.Errorf("Content-Type %q: %d %s, want 415", contentType, resp.StatusCode, body)
		}
	}
	// A form post, as an HTML form on another site sends it.
	resp, err := http.PostForm(g.URL+"/v1/sessions", url.Values{`{"client":{"name":"form"}}`: {""}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Errorf("a form post: %d, want 415", resp.StatusCode)
	}
	var list struct {
		Sessions []any `json:"sessions"`
	}
	g.call("GET", "/v1/sessions", testAgentKey, nil, 200, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("sessions were created: %v", list.Sessions)
	}
}
