package handlers

import (
	"io/fs"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// handleAsset serves the embedded web files: "/" is index.html, the SDK is
// /toolgate.js. Unknown paths are a JSON 404, like the API's.
func (a *API) handleAsset(assets fs.FS) http.HandlerFunc {
	files := http.FileServerFS(assets)
	return func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "index.html"
		}
		if _, err := fs.Stat(assets, name); err != nil {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.ENotFound, "no route %s %s", r.Method, r.URL.Path))
			return
		}
		switch {
		case strings.HasSuffix(name, ".d.ts"):
			w.Header().Set("Content-Type", "application/typescript; charset=utf-8")
		case strings.HasSuffix(name, ".js"):
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}
}
