package handlers

import (
	"mime"
	"net/http"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// ContentSecurityPolicy is the policy every reply carries. The page and its
// scripts come only from the gateway itself (no inline script or style;
// the favicon is a data: image), they talk only to the gateway, and no
// other site may frame them (clickjacking the console).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// browserHeaders sets the headers that keep a browser from misreading or
// misusing any reply: the page's policy, no content sniffing (a JSON reply
// is never run as a script or shown as HTML), no framing by another site,
// and no Referer carrying a session's address elsewhere. They go on every
// reply, the API's JSON and streams included, so no route can forget them.
func browserHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// jsonOnlyPaths are the POST routes that must be declared JSON even when
// their body is empty: they create state without any credential (a
// session, a stream, a poll), and a cross-site page can send a POST with no
// Content-Type, or a "simple" one (text/plain, a form), without asking the
// gateway first. Requiring application/json forces such a page through a
// CORS preflight, which the gateway refuses for origins it does not allow.
var jsonOnlyPaths = map[string]bool{
	"/v1/sessions": true,
	"/v1/streams":  true,
	"/v1/poll":     true,
}

// requireJSON refuses with 415 a POST whose body is not declared JSON:
// every POST that carries a body (a declared length above zero, or a
// chunked one), and the state-creating POSTs of jsonOnlyPaths always.
// Parameters such as charset are allowed. Nothing is read or changed
// before the refusal.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && (r.ContentLength != 0 || jsonOnlyPaths[r.URL.Path]) && !isJSON(r.Header.Get("Content-Type")) {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EUnsupportedMediaType,
				"a POST to %s must be sent with Content-Type: application/json", r.URL.Path))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isJSON reports whether a Content-Type header declares application/json
// (in any case, with or without parameters).
func isJSON(contentType string) bool {
	if contentType == "" {
		return false
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "application/json"
}
