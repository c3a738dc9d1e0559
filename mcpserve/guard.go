package mcpserve

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// originPolicy decides which browser origins may use the endpoint: a
// request without Origin (any host that is not a browser page), a page of
// the gateway's own origin, and the allowed origins ("*" for any; an entry
// may hold one "*", as "https://*.example.com"). A page elsewhere could
// otherwise drive tools in the user's name from a browser that holds the
// key (MCP's transport rules require the check, against DNS rebinding
// too).
type originPolicy struct {
	any      bool
	exact    map[string]bool
	patterns [][2]string // prefix, suffix around the "*"
}

func newOriginPolicy(allowed []string) *originPolicy {
	p := &originPolicy{exact: map[string]bool{}}
	for _, o := range allowed {
		o = strings.ToLower(strings.TrimSpace(o))
		switch {
		case o == "*":
			p.any = true
		case strings.Count(o, "*") == 1:
			prefix, suffix, _ := strings.Cut(o, "*")
			p.patterns = append(p.patterns, [2]string{prefix, suffix})
		case o != "":
			p.exact[o] = true
		}
	}
	return p
}

// allows reports whether a request may be served for its Origin.
func (p *originPolicy) allows(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || p.any {
		return true
	}
	origin = strings.ToLower(origin)
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return true // same origin
	}
	if p.exact[origin] {
		return true
	}
	for _, pat := range p.patterns {
		if len(origin) >= len(pat[0])+len(pat[1]) && strings.HasPrefix(origin, pat[0]) && strings.HasSuffix(origin, pat[1]) {
			return true
		}
	}
	return false
}

// guard serves next only to requests from an allowed origin (403
// PERMISSION_DENIED otherwise) that bear the agent key (401
// UNAUTHENTICATED with WWW-Authenticate: Bearer otherwise).
func (e *Endpoint) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.origins.allows(r) {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EPermissionDenied,
				"the origin %q may not use this gateway's MCP endpoint; its operator can add it to --allowed-origins (TOOLGATE_ALLOWED_ORIGINS)", r.Header.Get("Origin")))
			return
		}
		secret := jsonhttp.Bearer(r, false)
		if secret == "" || !e.keys.IsAgentKey(secret) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate"`)
			msg := "invalid agent key"
			if secret == "" {
				msg = "the agent key is required (Authorization: Bearer <agent key>)"
			}
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EUnauthenticated, "%s", msg))
			return
		}
		next.ServeHTTP(w, r)
	})
}
