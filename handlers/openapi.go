package handlers

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the OpenAPI document, openapi.json
	"encoding/hex"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// openAPIDocument is the OpenAPI 3.1 document of the REST API: the one
// source of it (docs/openapi.md says how it is kept true), served as it is
// at GET /openapi.json.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPIETag is the document's entity tag: it changes only with the
// document, so a client's copy is revalidated with a 304.
var openAPIETag = func() string {
	sum := sha256.Sum256(openAPIDocument)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}()

// OpenAPI returns a copy of the OpenAPI 3.1 document of the REST API, as
// GET /openapi.json serves it.
func OpenAPI() []byte { return bytes.Clone(openAPIDocument) }

// Routes returns the router, for chi.Walk: the test that holds the
// OpenAPI document to the routes walks it.
func (a *API) Routes() chi.Routes { return a.router }

// handleOpenAPI serves GET /openapi.json, which anyone may read (it holds
// no secret; the API's shape is public in the repository anyway). It may
// be cached for an hour, then revalidated by its ETag.
func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("ETag", openAPIETag)
	http.ServeContent(w, r, "openapi.json", time.Time{}, bytes.NewReader(openAPIDocument))
}
