package agentloop

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/toolgate/toolgate"
)

// refusedRequestHeaders are the headers http_request does not let the
// agent set. Host would send the request to another virtual host than the
// one the URL names (and an allowed name could reach any site on its
// server); the hop-by-hop and framing headers belong to the transport,
// which sets them itself; the proxy ones would be sent to the origin.
var refusedRequestHeaders = []string{
	"Host", "Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Authenticate", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Expect", "Http2-Settings",
}

// parseRequestURL reads the URL of a call: absolute, http or https, a
// host written plainly.
func parseRequestURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL checks a URL, the first or a redirect's: only http and https,
// a host, a port in range, a host that is not an IPv4 address in disguise
// (see checkHostSpelling). The addresses are checked when it is dialed.
func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return fmt.Errorf("not an absolute URL; write it with http:// or https://")
		}
		return fmt.Errorf("scheme %q is not allowed; only http and https are", clip(u.Scheme, 20))
	}
	if u.Opaque != "" || u.Host == "" {
		return fmt.Errorf("no host; write it as %s://host/path", u.Scheme)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return fmt.Errorf("no host; write it as %s://host/path", u.Scheme)
	}
	if port != "" && !validPort(port) {
		return fmt.Errorf("port %q is not a number between 1 and 65535", clip(port, 20))
	}
	return checkHostSpelling(host)
}

// requestHeader checks the headers of a call and returns them as a
// request header: at most maxHTTPRequestHeaders, maxHTTPRequestHeaderBytes
// in all, names that are tokens, values without control characters, none
// of refusedRequestHeaders.
func requestHeader(headers map[string]string) (http.Header, error) {
	if len(headers) > maxHTTPRequestHeaders {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request: %d headers; at most %d", len(headers), maxHTTPRequestHeaders)
	}
	names := make([]string, 0, len(headers))
	size := 0
	for name, value := range headers {
		names = append(names, name)
		size += len(name) + len(value)
	}
	if size > maxHTTPRequestHeaderBytes {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request: the headers are %d bytes; at most %d", size, maxHTTPRequestHeaderBytes)
	}
	slices.Sort(names)
	h := http.Header{}
	for _, name := range names {
		if !isToken(name) {
			return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request: header name %q is not a valid HTTP header name", clip(name, 64))
		}
		canonical := http.CanonicalHeaderKey(name)
		if slices.Contains(refusedRequestHeaders, canonical) {
			return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request: header %s may not be set; the transport sets it (refused: %s)", canonical, strings.Join(refusedRequestHeaders, ", "))
		}
		value := headers[name]
		if strings.ContainsFunc(value, func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }) {
			return nil, toolgate.Errorf(toolgate.EInvalidArgs, "http_request: the value of header %s has a control character (a line break?)", canonical)
		}
		h.Set(canonical, value)
	}
	return h, nil
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2), as
// a header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r >= 0x7f || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}
