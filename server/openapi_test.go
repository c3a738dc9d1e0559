package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	vErrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/server"
)

// The OpenAPI document (handlers/openapi.json, served at /openapi.json)
// is held to the gateway three ways: its operations are the router's
// routes, both ways (TestOpenAPIMatchesRouter); what GET /openapi.json
// serves is the document, valid 3.1 (TestOpenAPIServed); and the requests
// and replies of the main flows through a real gateway match it
// (TestOpenAPIRealReplies). The routes that are not REST are listed in the
// document itself (x-toolgate-not-rest), each with its reason.

// openAPIDoc is the part of the document the route check reads.
type openAPIDoc struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
	NotREST []struct {
		Method string `json:"method"` // "*" for every method
		Path   string `json:"path"`
		Reason string `json:"reason"`
	} `json:"x-toolgate-not-rest"`
}

// httpMethods are the members of a path item that are operations.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func readOpenAPIDoc(t *testing.T, data []byte) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the OpenAPI document is not JSON: %v", err)
	}
	return doc
}

// routesOf walks the gateway's real router: "METHOD /path" for every
// route, a pattern's trailing slash dropped (chi serves /v1/sessions/{sid}
// for the sub-router's "/").
func routesOf(t *testing.T, srv *server.Server) map[string]bool {
	t.Helper()
	api, ok := srv.Handler().(*handlers.API)
	if !ok {
		t.Fatalf("the server's handler is a %T, not *handlers.API", srv.Handler())
	}
	routes := map[string]bool{}
	err := chi.Walk(api.Routes(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if len(route) > 1 {
			route = strings.TrimSuffix(route, "/")
		}
		routes[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return routes
}

func TestOpenAPIMatchesRouter(t *testing.T) {
	srv, _ := server.StartForTest(t, server.ConfigForTest(t))
	routes := routesOf(t, srv)
	doc := readOpenAPIDoc(t, handlers.OpenAPI())

	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for member := range item {
			if slices.Contains(httpMethods, member) {
				documented[strings.ToUpper(member)+" "+path] = true
			}
		}
	}
	notREST := func(route string) (string, bool) {
		method, path, _ := strings.Cut(route, " ")
		for _, x := range doc.NotREST {
			if x.Path == path && (x.Method == "*" || x.Method == method) {
				return x.Reason, true
			}
		}
		return "", false
	}

	var missing, extra []string
	for route := range routes {
		_, excluded := notREST(route)
		if !documented[route] && !excluded {
			missing = append(missing, route)
		}
		if documented[route] && excluded {
			t.Errorf("%s is both documented and listed in x-toolgate-not-rest", route)
		}
	}
	for op := range documented {
		if !routes[op] {
			extra = append(extra, op)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, r := range missing {
		t.Errorf("the router serves %s, which the OpenAPI document neither documents nor lists in x-toolgate-not-rest", r)
	}
	for _, op := range extra {
		t.Errorf("the OpenAPI document documents %s, which the router does not serve", op)
	}
	for _, x := range doc.NotREST {
		if strings.TrimSpace(x.Reason) == "" {
			t.Errorf("x-toolgate-not-rest lists %s %s without a reason", x.Method, x.Path)
		}
		found := false
		for route := range routes {
			if _, path, _ := strings.Cut(route, " "); path == x.Path && (x.Method == "*" || strings.HasPrefix(route, x.Method+" ")) {
				found = true
			}
		}
		if !found {
			t.Errorf("x-toolgate-not-rest lists %s %s, which the router does not serve", x.Method, x.Path)
		}
	}
	if len(documented) < 30 {
		t.Errorf("only %d operations documented", len(documented))
	}
}

func TestOpenAPIServed(t *testing.T) {
	g := startGateway(t, nil)
	resp, err := http.Get(g.URL + "/openapi.json") // no credentials
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=") || strings.Contains(cc, "no-store") {
		t.Errorf("Cache-Control %q: not cacheable", cc)
	}
	if !bytes.Equal(body, handlers.OpenAPI()) {
		t.Error("GET /openapi.json does not serve the embedded document")
	}
	doc := readOpenAPIDoc(t, body)
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf("openapi %q, want 3.1.x", doc.OpenAPI)
	}

	// A copy revalidated by its ETag is current.
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req, _ := http.NewRequest("GET", g.URL+"/openapi.json", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET /openapi.json with If-None-Match: %d, want 304", resp.StatusCode)
	}

	// The document is valid OpenAPI 3.1 to a library that reads it.
	v := newOpenAPIValidator(t)
	if ok, errs := v.ValidateDocument(); !ok {
		t.Errorf("the OpenAPI document is not valid:\n%s", describeValidation(errs))
	}
}

// newOpenAPIValidator builds a validator of requests and replies against
// the embedded document, with the formats (date-time, uuid) asserted.
func newOpenAPIValidator(t *testing.T) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(handlers.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("the OpenAPI document cannot be read: %v", errs)
	}
	return v
}

func describeValidation(errs []*vErrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s: %s\n", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "    at %s: %s\n", f.FieldPath, f.Reason)
		}
	}
	return b.String()
}
