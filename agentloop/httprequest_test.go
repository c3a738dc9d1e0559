package agentloop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// targetServer is a real HTTP server on 127.0.0.1 that counts the requests
// it served, by path.
type targetServer struct {
	*httptest.Server
	port string
	mu   sync.Mutex
	hits map[string]int
}

// served returns how many requests for path the server served.
func (ts *targetServer) served(path string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.hits[path]
}

// startTarget starts a target server; redirect is where /redirect points.
func startTarget(t *testing.T, redirect *atomic.Value) *targetServer {
	t.Helper()
	ts := &targetServer{hits: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("X-Seen-Header", r.Header.Get("X-Test"))
		w.Header().Set("X-User-Agent", r.UserAgent())
		w.Header().Add("X-Twice", "a")
		w.Header().Add("X-Twice", "b")
		w.WriteHeader(201)
		fmt.Fprintf(w, "got %q", body)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, redirect.Load().(string), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("é", 5000))) // 2 bytes a rune
	})
	mux.HandleFunc("/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte{0xff, 0xfe, 0x00, 0x01})
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "target reached")
	})
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		ts.hits[r.URL.Path]++
		ts.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	_, ts.port, _ = net.SplitHostPort(ts.Listener.Addr().String())
	return ts
}

// newHTTPTool makes an http_request tool or fails the test.
func newHTTPTool(t *testing.T, opts HTTPRequestOptions) *FuncTool[HTTPRequestArgs] {
	t.Helper()
	tool, err := NewHTTPRequestTool(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// send runs the tool with args as the gateway would.
func send(t *testing.T, tool toolgate.Tool, args any) (HTTPResponse, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Execute(context.Background(), raw)
	if err != nil {
		return HTTPResponse{}, err
	}
	var out HTTPResponse
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	return out, nil
}

// wantError fails the test unless err is a *toolgate.Error with code
// whose message contains every part.
func wantError(t *testing.T, what string, err error, code string, parts ...string) {
	t.Helper()
	var te *toolgate.Error
	if !errors.As(err, &te) {
		t.Fatalf("%s: error = %v, want %s", what, err, code)
	}
	if te.Code != code {
		t.Fatalf("%s: code = %s (%s), want %s", what, te.Code, te.Message, code)
	}
	for _, p := range parts {
		if !strings.Contains(te.Message, p) {
			t.Fatalf("%s: message %q does not say %q", what, te.Message, p)
		}
	}
}

func get(u string) HTTPRequestArgs { return HTTPRequestArgs{Method: "GET", URL: u} }

func TestHTTPRequestRefusedByDefault(t *testing.T) {
	t.Parallel()
	target := startTarget(t, nil)
	tool := newHTTPTool(t, HTTPRequestOptions{
		// Names the test controls: one resolving to loopback (DNS
		// rebinding), one to a public and a private address.
		LookupHost: func(ctx context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "rebind.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "mixed.test":
				return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("127.0.0.1")}, nil
			case "metadata.test":
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			}
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
	})
	if !tool.RequiresSanitization() || tool.Name() != "http_request" || tool.ReadOnly() {
		t.Fatalf("traits: sanitization %v, name %s, read-only %v", tool.RequiresSanitization(), tool.Name(), tool.ReadOnly())
	}
	for _, tc := range []struct {
		url   string
		parts []string
	}{
		{target.URL + "/", []string{"refuses 127.0.0.1", "loopback addresses are not reachable unless the host is in --http-allow"}},
		{"http://localhost:" + target.port + "/", []string{"refuses localhost (", "loopback"}},
		{"http://LOCALHOST:" + target.port + "/", []string{"loopback"}},
		{"http://[::1]:" + target.port + "/", []string{"refuses ::1", "loopback"}},
		{"http://[::ffff:127.0.0.1]:" + target.port + "/", []string{"::ffff:127.0.0.1", "loopback"}},
		{"http://[::ffff:7f00:1]:" + target.port + "/", []string{"loopback"}},
		{"http://[64:ff9b::7f00:1]:" + target.port + "/", []string{"loopback"}},
		{"http://127.0.0.2:" + target.port + "/", []string{"loopback"}},
		{"http://0.0.0.0:" + target.port + "/", []string{"unspecified"}},
		{"http://10.0.0.1/", []string{"private"}},
		{"http://192.168.0.1/", []string{"private"}},
		{"http://100.64.0.1/", []string{"carrier-grade NAT"}},
		{"http://[fe80::1]/", []string{"link-local"}},
		{"http://[fd00::1]/", []string{"private"}},
		{"http://169.254.169.254/latest/meta-data/", []string{"refuses 169.254.169.254", "cloud metadata"}},
		{"http://[fd00:ec2::254]/", []string{"cloud metadata"}},
		{"http://metadata.test/", []string{"metadata.test (169.254.169.254)", "cloud metadata"}},
		{"http://rebind.test:" + target.port + "/", []string{"rebind.test (127.0.0.1)", "loopback"}},
		{"http://mixed.test:" + target.port + "/", []string{"mixed.test (127.0.0.1)", "loopback"}},
		{"https://127.0.0.1:" + target.port + "/", []string{"loopback"}},
		{"http://user:pass@127.0.0.1:" + target.port + "/", []string{"loopback"}},
	} {
		_, err := send(t, tool, get(tc.url))
		wantError(t, tc.url, err, toolgate.EPermissionDenied, tc.parts...)
	}
	// IPv4 addresses in disguise: the resolver could read them as
	// 127.0.0.1 (getaddrinfo does), so they are refused before any lookup.
	for _, u := range []string{"http://2130706433:" + target.port + "/", "http://0x7f.0.0.1:" + target.port + "/",
		"http://0177.0.0.1:" + target.port + "/", "http://127.1:" + target.port + "/", "http://0x7f000001/"} {
		_, err := send(t, tool, get(u))
		wantError(t, u, err, toolgate.EInvalidArgs, "four decimal numbers")
	}
	if n := target.served("/"); n != 0 {
		t.Fatalf("the target served %d requests", n)
	}
}

func TestHTTPRequestAllowed(t *testing.T) {
	t.Parallel()
	target := startTarget(t, nil)
	tool := newHTTPTool(t, HTTPRequestOptions{Allow: []string{"127.0.0.1", "localhost:" + target.port, "169.254.169.254"}})

	out, err := send(t, tool, HTTPRequestArgs{Method: "POST", URL: target.URL + "/echo?x=1", Headers: map[string]string{"x-test": "hello", "Content-Type": "text/plain"}, Body: "ping"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != 201 || out.Body != `got "ping"` || out.Truncated || out.BodyEncoding != "" || out.URL != target.URL+"/echo?x=1" ||
		out.Headers["X-Method"] != "POST" || out.Headers["X-Seen-Header"] != "hello" || out.Headers["X-Twice"] != "a, b" ||
		!strings.HasPrefix(out.Headers["X-User-Agent"], "toolgate-http_request") {
		t.Fatalf("POST = %+v", out)
	}
	out, err = send(t, tool, HTTPRequestArgs{Method: "HEAD", URL: target.URL + "/echo", Headers: map[string]string{"User-Agent": "mine"}})
	if err != nil || out.Status != 201 || out.Body != "" || out.Headers["X-Method"] != "HEAD" || out.Headers["X-User-Agent"] != "mine" {
		t.Fatalf("HEAD = %+v, %v", out, err)
	}
	// An allowed name with its port: that port only.
	out, err = send(t, tool, get("http://localhost:"+target.port+"/"))
	if err != nil || out.Status != 200 || out.Body != "target reached" {
		t.Fatalf("localhost on its allowed port = %+v, %v", out, err)
	}
	_, err = send(t, tool, get("http://localhost:1/"))
	wantError(t, "localhost on another port", err, toolgate.EPermissionDenied, "loopback")
	// A status that is an error is an answer, not a failed call.
	out, err = send(t, tool, get(target.URL+"/nothing-here/x"))
	if err != nil || out.Status != 200 {
		t.Fatalf("catch-all = %+v, %v", out, err)
	}
	// Metadata stays refused, listed or not.
	_, err = send(t, tool, get("http://169.254.169.254/"))
	wantError(t, "metadata listed in --http-allow", err, toolgate.EPermissionDenied, "never reachable")
	// A closed port: the failure says what went wrong.
	closed := closedPort(t)
	_, err = send(t, tool, get("http://127.0.0.1:"+closed+"/"))
	wantError(t, "closed port", err, errHTTPFailed, "GET http://127.0.0.1:"+closed+"/ failed", "refused")
}

// closedPort returns a port on 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return port
}

func TestHTTPRequestRedirects(t *testing.T) {
	t.Parallel()
	var to atomic.Value
	target := startTarget(t, &to)
	other := startTarget(t, nil) // reached as localhost, which is not allowed
	tool := newHTTPTool(t, HTTPRequestOptions{Allow: []string{"127.0.0.1"}, MaxRedirects: 3})

	to.Store("/target?from=redirect")
	out, err := send(t, tool, get(target.URL+"/redirect"))
	if err != nil || out.Status != 200 || out.Body != "target reached" || out.URL != target.URL+"/target?from=redirect" {
		t.Fatalf("redirect within the allowed host = %+v, %v", out, err)
	}

	for _, tc := range []struct {
		to    string
		code  string
		parts []string
	}{
		{"http://localhost:" + other.port + "/target", toolgate.EPermissionDenied, []string{"refuses localhost (", "loopback"}},
		{"http://[::1]:" + other.port + "/target", toolgate.EPermissionDenied, []string{"refuses ::1", "loopback"}},
		{"http://169.254.169.254/latest/meta-data/iam/", toolgate.EPermissionDenied, []string{"cloud metadata"}},
		{"ftp://127.0.0.1/target", toolgate.EPermissionDenied, []string{"refuses the redirect from " + target.URL + "/redirect to ftp://127.0.0.1/target", `scheme "ftp" is not allowed`}},
		{"file:///etc/passwd", toolgate.EPermissionDenied, []string{`scheme "file" is not allowed`}},
		{"http://2130706433:" + other.port + "/target", toolgate.EPermissionDenied, []string{"four decimal numbers"}},
	} {
		to.Store(tc.to)
		_, err := send(t, tool, get(target.URL+"/redirect"))
		wantError(t, "redirect to "+tc.to, err, tc.code, tc.parts...)
	}
	if n := other.served("/target"); n != 0 {
		t.Fatalf("the refused redirect target served %d requests", n)
	}

	_, err = send(t, tool, get(target.URL+"/loop"))
	wantError(t, "redirect loop", err, errHTTPFailed, "stopped after 3 redirects")
	if n := target.served("/loop"); n != 4 {
		t.Fatalf("the loop was requested %d times, want 4 (the first and 3 redirects)", n)
	}
}

func TestHTTPRequestCaps(t *testing.T) {
	t.Parallel()
	target := startTarget(t, nil)
	tool := newHTTPTool(t, HTTPRequestOptions{Allow: []string{"127.0.0.1"}, MaxResponseBytes: 1001, MaxRequestBytes: 100, Timeout: 300 * time.Millisecond})

	// Cut at 1001 bytes, in the middle of a 2-byte rune: 1000 bytes of text.
	out, err := send(t, tool, get(target.URL+"/big"))
	if err != nil || !out.Truncated || len(out.Body) != 1000 || out.Body != strings.Repeat("é", 500) || out.BodyEncoding != "" {
		t.Fatalf("big = truncated %v, %d bytes, encoding %q, %v", out.Truncated, len(out.Body), out.BodyEncoding, err)
	}
	out, err = send(t, tool, get(target.URL+"/binary"))
	if b, _ := base64.StdEncoding.DecodeString(out.Body); err != nil || out.BodyEncoding != "base64" || string(b) != "\xff\xfe\x00\x01" || out.Truncated {
		t.Fatalf("binary = %+v, %v", out, err)
	}

	start := time.Now()
	_, err = send(t, tool, get(target.URL+"/slow"))
	wantError(t, "slow server", err, toolgate.ETimeout, "did not answer within 300ms")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the slow server held the call %s", d)
	}
	// The call's own deadline ends it sooner.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	long := newHTTPTool(t, HTTPRequestOptions{Allow: []string{"127.0.0.1"}})
	raw, _ := json.Marshal(get(target.URL + "/slow"))
	if _, err := long.Execute(ctx, raw); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call deadline: %v", err)
	}

	_, err = send(t, tool, HTTPRequestArgs{Method: "POST", URL: target.URL + "/echo", Body: strings.Repeat("x", 101)})
	wantError(t, "request body", err, toolgate.EInvalidArgs, "101 bytes; at most 100")
	if n := target.served("/echo"); n != 0 {
		t.Fatalf("a refused request reached the server %d times", n)
	}
}

func TestHTTPRequestBadInput(t *testing.T) {
	t.Parallel()
	tool := newHTTPTool(t, HTTPRequestOptions{Allow: []string{"127.0.0.1"}})
	many := map[string]string{}
	for i := range 33 {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	for _, tc := range []struct {
		name string
		args any
		part string
	}{
		{"unknown method", HTTPRequestArgs{Method: "TRACE", URL: "http://127.0.0.1/"}, `method "TRACE" is not one of GET`},
		{"lower-case method", HTTPRequestArgs{Method: "get", URL: "http://127.0.0.1/"}, `method "get"`},
		{"no method", HTTPRequestArgs{URL: "http://127.0.0.1/"}, `method ""`},
		{"ftp", get("ftp://example.com/x"), `scheme "ftp" is not allowed`},
		{"file", get("file:///etc/passwd"), `scheme "file" is not allowed`},
		{"relative", get("/path"), "not an absolute URL"},
		{"no host", get("http:///path"), "no host"},
		{"opaque", get("http:example.com"), "no host"},
		{"not a URL", get("http://exa mple.com/"), "refuses the URL"},
		{"port", get("http://example.com:99999/"), `port "99999"`},
		{"zone", get("http://[fe80::1%25eth0]/"), "zone"},
		{"long URL", get("http://example.com/" + strings.Repeat("a", 9000)), "at most 8192"},
		{"Host", HTTPRequestArgs{Method: "GET", URL: "http://127.0.0.1/", Headers: map[string]string{"host": "evil.example"}}, "header Host may not be set"},
		{"Transfer-Encoding", HTTPRequestArgs{Method: "GET", URL: "http://127.0.0.1/", Headers: map[string]string{"Transfer-Encoding": "chunked"}}, "header Transfer-Encoding may not be set"},
		{"Connection", HTTPRequestArgs{Method: "GET", URL: "http://127.0.0.1/", Headers: map[string]string{"Connection": "close"}}, "header Connection"},
		{"Proxy-Authorization", HTTPRequestArgs{Method: "GET", URL: "http://127.0.0.1/", Headers: map[string]string{"Proxy-Authorization": "x"}}, "Proxy-Authorization"},
		{"header name", HTTPRequestArgs{Method: "GET", URL: "http://127.0.0.1/", Headers: map[string]string{"bad name": "x"}}, `header name "bad name"`},
		{"header line break", HTTPRequestArgs{Method: "GET", URL: "http://127.0.0.1/", Headers: map[string]string{"X-A": "a\r\nHost: evil"}}, "control character"},
		{"too many headers", HTTPRequestArgs{Method: "GET", URL: "http://127.0.0.1/", Headers: many}, "33 headers; at most 32"},
		{"headers too big", HTTPRequestArgs{Method: "GET", URL: "http://127.0.0.1/", Headers: map[string]string{"X-A": strings.Repeat("a", 17000)}}, "at most 16384"},
		{"unknown field", map[string]any{"method": "GET", "url": "http://127.0.0.1/", "follow": true}, "unknown field"},
	} {
		_, err := send(t, tool, tc.args)
		wantError(t, tc.name, err, toolgate.EInvalidArgs, tc.part)
	}
	if _, err := NewHTTPRequestTool(HTTPRequestOptions{Allow: []string{"http://example.com"}}); err == nil || !strings.Contains(err.Error(), "--http-allow") {
		t.Fatalf("bad allow entry: %v", err)
	}
}

func TestHTTPRequestSchema(t *testing.T) {
	t.Parallel()
	tool := newHTTPTool(t, HTTPRequestOptions{})
	var schema struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.Parameters(), &schema); err != nil {
		t.Fatal(err)
	}
	if strings.Join(schema.Required, ",") != "method,url" || strings.Join(schema.Properties["method"].Enum, ",") != strings.Join(httpMethods, ",") {
		t.Fatalf("schema = %s", tool.Parameters())
	}
	if spec := toolgate.SpecOf(tool); spec.RequiresSanitization == nil || !*spec.RequiresSanitization || spec.TimeoutMS != (DefaultHTTPTimeout+5*time.Second).Milliseconds() {
		t.Fatalf("spec = %+v", spec)
	}
}
