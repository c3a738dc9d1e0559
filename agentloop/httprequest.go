package agentloop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
)

// errHTTPFailed is the error code of an http_request call whose request
// did not get an answer: the name does not resolve, the connection or
// TLS fails, too many redirects. An answer with any status, 4xx and 5xx
// included, is not an error: the call completes with that status.
const errHTTPFailed = "HTTP_FAILED"

// The defaults of HTTPRequestOptions.
const (
	DefaultHTTPMaxResponseBytes = 256 << 10
	DefaultHTTPMaxRequestBytes  = 256 << 10
	DefaultHTTPTimeout          = 30 * time.Second
	DefaultHTTPMaxRedirects     = 5
)

// Fixed caps of http_request's input and of the answer's headers.
const (
	maxHTTPURLBytes           = 8 << 10
	maxHTTPRequestHeaders     = 32
	maxHTTPRequestHeaderBytes = 16 << 10 // names and values together
	maxHTTPResponseHeaders    = 16 << 10 // what the transport reads of the answer's header
)

// HTTPRequestOptions configure the http_request tool; zero fields take the
// defaults.
type HTTPRequestOptions struct {
	// Allow are the --http-allow entries: hosts reachable although their
	// addresses are refused by default (see HostAllowList).
	Allow []string
	// MaxResponseBytes caps the answer's body as read (after any gzip
	// decoding by the transport); more is cut and reported as truncated.
	MaxResponseBytes int
	// MaxRequestBytes caps the request's body.
	MaxRequestBytes int
	// Timeout caps one call from the first connection to the body's last
	// byte, redirects included; the call's own deadline may end it sooner.
	Timeout time.Duration
	// MaxRedirects caps the redirects followed.
	MaxRedirects int
	// LookupHost resolves a host name (default: the system resolver). Tests
	// set it to make a name resolve to an address of their choosing.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
	// SessionRuns lets runs started with a session's token use the tool
	// (--http-request-runs all). Off, only the agent key's runs and
	// callers may: anyone may create a session on a gateway without a
	// client key, and its runs should not make the gateway send requests
	// to the Internet on their behalf unless the operator says so.
	SessionRuns bool
}

// HTTPRequestArgs are the arguments of the http_request tool.
type HTTPRequestArgs struct {
	Method  string            `json:"method" jsonschema:"enum=GET,enum=HEAD,enum=POST,enum=PUT,enum=PATCH,enum=DELETE,enum=OPTIONS,description=HTTP method"`
	URL     string            `json:"url" jsonschema:"description=absolute http or https URL"`
	Headers map[string]string `json:"headers,omitempty" jsonschema:"description=request headers by name (at most 32; Host and hop-by-hop headers are refused)"`
	Body    string            `json:"body,omitempty" jsonschema:"description=request body as text"`
}

// HTTPResponse is what http_request returns: the answer of the last
// request, redirects followed.
type HTTPResponse struct {
	Status int    `json:"status"`
	URL    string `json:"url"` // the URL that answered, after redirects
	// Headers are the answer's headers by canonical name, the values of a
	// repeated header joined with ", ".
	Headers map[string]string `json:"headers"`
	// Body is the answer's body as text when it is UTF-8, else base64 and
	// BodyEncoding is "base64".
	Body         string `json:"body"`
	BodyEncoding string `json:"body_encoding,omitempty"`
	// Truncated: the body was longer than the cap and was cut there.
	Truncated bool `json:"truncated"`
}

// httpMethods are the methods http_request sends.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// NewHTTPRequestTool returns http_request: outbound HTTP for the agent,
// with the outbound policy of this file and httprequest_dial.go: only http
// and https; loopback, private, link-local, shared, multicast, reserved
// and cloud metadata addresses refused (after name resolution, on the
// address dialed, at every redirect) unless the host is allowed (never
// metadata); no proxy from the environment (it would connect in the
// policy's place); body, headers, time and redirects capped. Its output
// comes from outside and passes the safety step (ReachesOutside). An
// --http-allow entry that does not parse is an error.
func NewHTTPRequestTool(opts HTTPRequestOptions) (*FuncTool[HTTPRequestArgs], error) {
	allow, err := ParseHostAllowList(opts.Allow)
	if err != nil {
		return nil, err
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultHTTPMaxResponseBytes
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultHTTPMaxRequestBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultHTTPTimeout
	}
	if opts.MaxRedirects <= 0 {
		opts.MaxRedirects = DefaultHTTPMaxRedirects
	}
	if opts.LookupHost == nil {
		opts.LookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	dialer := &guardedDialer{allow: allow, lookup: opts.LookupHost, dialer: net.Dialer{Timeout: 10 * time.Second}}
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil, // never: a proxy would connect where the policy cannot look
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: maxHTTPResponseHeaders,
			DisableKeepAlives:      true, // each call checks its own connection
		},
		CheckRedirect: checkRedirect(opts.MaxRedirects),
		Timeout:       opts.Timeout,
	}
	h := &httpRequester{client: client, opts: opts}
	t := NewFuncTool("http_request",
		"Send an HTTP request (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS) to a public http or https URL and return the status, headers and body. "+
			"Loopback, private, link-local and cloud metadata addresses are refused.",
		h.do)
	t.ReachesOutside = true
	// A call the gateway's stop interrupted is sent again at the next start
	// only when its method is safe: a POST may have reached the server.
	t.Rerun = safeMethodOnly
	// The call's deadline a little past the tool's own cap, so a slow server
	// ends with http_request's message rather than a bare timeout.
	t.TimeoutValue = opts.Timeout + 5*time.Second
	return t, nil
}

// safeMethodOnly reports whether http_request's arguments ask for a safe
// method (GET, HEAD, OPTIONS), which may be sent again.
func safeMethodOnly(raw json.RawMessage) bool {
	var a struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return false
	}
	switch a.Method {
	case "GET", "HEAD", "OPTIONS":
		return true
	}
	return false
}

// httpRequester sends http_request's requests.
type httpRequester struct {
	client *http.Client
	opts   HTTPRequestOptions
}

// do runs one call: the arguments checked, the request sent, the answer
// read up to the cap.
func (h *httpRequester) do(ctx context.Context, a HTTPRequestArgs) (any, error) {
	if caller := toolgate.CallerSession(ctx); caller != "" && !h.opts.SessionRuns {
		return nil, toolgate.Errorf(toolgate.EPermissionDenied,
			"http_request is not available to runs started with a session's token on this gateway (the operator allows it with --http-request-runs all)")
	}
	req, err := h.newRequest(ctx, a)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, h.failure(ctx, req, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(h.opts.MaxResponseBytes)+1))
	if err != nil {
		return nil, h.failure(ctx, req, err)
	}
	out := HTTPResponse{Status: resp.StatusCode, URL: resp.Request.URL.Redacted(), Headers: map[string]string{}}
	if len(body) > h.opts.MaxResponseBytes {
		body, out.Truncated = cutAtRune(body[:h.opts.MaxResponseBytes]), true
	}
	if utf8.Valid(body) {
		out.Body = string(body)
	} else {
		out.Body, out.BodyEncoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	for name, values := range resp.Header {
		out.Headers[name] = strings.Join(values, ", ")
	}
	return out, nil
}

// newRequest checks the arguments and builds the request; anything
// refused is INVALID_ARGS saying why.
func (h *httpRequester) newRequest(ctx context.Context, a HTTPRequestArgs) (*http.Request, error) {
	if !slices.Contains(httpMethods, a.Method) {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request: method %q is not one of %s", clip(a.Method, 20), strings.Join(httpMethods, ", "))
	}
	if len(a.URL) > maxHTTPURLBytes {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request: the URL is %d bytes; at most %d", len(a.URL), maxHTTPURLBytes)
	}
	u, err := parseRequestURL(a.URL)
	if err != nil {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request refuses the URL %q: %v", clip(a.URL, 200), err)
	}
	if len(a.Body) > h.opts.MaxRequestBytes {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request: the body is %d bytes; at most %d", len(a.Body), h.opts.MaxRequestBytes)
	}
	header, err := requestHeader(a.Headers)
	if err != nil {
		return nil, err
	}
	var body io.Reader
	if a.Body != "" {
		body = strings.NewReader(a.Body)
	}
	req, err := http.NewRequestWithContext(ctx, a.Method, u.String(), body)
	if err != nil {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request refuses the URL %q: %v", clip(a.URL, 200), err)
	}
	req.Header = header
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "toolgate-http_request/1")
	}
	return req, nil
}

// failure turns an error of the exchange into the call's error: the
// policy's refusals as they are, the time cap as TIMEOUT, the rest
// HTTP_FAILED with what went wrong.
func (h *httpRequester) failure(ctx context.Context, req *http.Request, err error) error {
	var te *toolgate.Error
	if errors.As(err, &te) {
		return te
	}
	if ctx.Err() != nil {
		return ctx.Err() // the call ended (timed out, cancelled); the gateway says so
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return toolgate.Errorf(toolgate.ETimeout, "http_request: %s did not answer within %s", req.URL.Redacted(), h.opts.Timeout)
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap() // drop url.Error's repetition of the method and URL
	}
	return toolgate.Errorf(errHTTPFailed, "http_request: %s %s failed: %v", req.Method, req.URL.Redacted(), err)
}

// cutAtRune drops an incomplete UTF-8 sequence the cap cut at the end of
// b, so a truncated text body stays text.
func cutAtRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
