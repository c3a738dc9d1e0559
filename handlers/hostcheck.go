package handlers

import (
	"net"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// hostPolicy decides which Host headers the gateway answers, against DNS
// rebinding: a page on evil.example whose name is made to resolve to the
// gateway's address is same-origin with it in the browser's eyes, but its
// requests still say "Host: evil.example", and are refused here.
//
// Always allowed, because no page can rebind them: an IP literal (the
// page's origin is then that address itself), "localhost" and names under
// ".localhost" (browsers resolve them to loopback without DNS), and an
// empty Host (HTTP/1.0; browsers always send one). Allowed besides: the
// host of the listen address when it is a name, and each allowed host
// ("example.com", "*.example.com" for its subdomains, "*" for any name).
// A gateway listening on all interfaces with no allowed host therefore
// answers requests by address, not by name; the serve command warns of it.
type hostPolicy struct {
	anyName  bool
	names    map[string]bool // exact names, lower case, no port
	suffixes []string        // ".example.com" of "*.example.com"
}

// newHostPolicy builds the policy of a gateway listening on listenAddr
// with the allowed hosts (ports in them are ignored).
func newHostPolicy(listenAddr string, allowed []string) *hostPolicy {
	p := &hostPolicy{names: map[string]bool{}}
	if host := hostname(listenAddr); host != "" && net.ParseIP(host) == nil {
		p.names[host] = true
	}
	for _, entry := range allowed {
		switch name := hostname(strings.TrimSpace(entry)); {
		case name == "*":
			p.anyName = true
		case strings.HasPrefix(name, "*."):
			p.suffixes = append(p.suffixes, name[1:])
		case name != "":
			p.names[name] = true
		}
	}
	return p
}

// allows reports whether a request with this Host header is answered.
func (p *hostPolicy) allows(hostHeader string) bool {
	host := hostname(hostHeader)
	switch {
	case host == "", net.ParseIP(host) != nil:
		return true
	case host == "localhost", strings.HasSuffix(host, ".localhost"):
		return true
	case p.anyName, p.names[host]:
		return true
	}
	for _, suffix := range p.suffixes {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

// checkHost refuses with 421 Misdirected Request a request whose Host the
// policy does not allow, before anything else looks at it.
func (p *hostPolicy) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.allows(r.Host) {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EMisdirectedRequest,
				"this gateway does not answer for the host %q; its operator can add it to --allowed-hosts (TOOLGATE_ALLOWED_HOSTS)", hostname(r.Host)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostname returns the host of a "host:port", "[v6]:port", "host" or "v6"
// value, in lower case and without a final dot.
func hostname(hostPort string) string {
	host := hostPort
	if h, _, err := net.SplitHostPort(hostPort); err == nil {
		host = h
	}
	host = strings.TrimPrefix(strings.TrimSuffix(host, "]"), "[")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}
