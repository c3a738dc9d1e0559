package mcpserve_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate/mcpserve"
)

// A host that connects as the gateway starts finds every tool listed: its
// requests wait for the first listing after Start, which reads each open
// session. (Before, a request could come first: a tools/call of a tool not
// listed yet was refused as unknown, 400 on 2026-07-28, which made
// TestCallMetaStrict fail under load.)
func TestRequestsWaitForTheFirstListing(t *testing.T) {
	f := newFakeEngine()
	f.setGateway(tool("echo"))
	f.setSession(sessionA, tool("look"))
	f.viewHeld = make(chan struct{}) // the first listing cannot read sessionA yet
	ep := mcpserve.New(mcpserve.Options{Auth: f, Sessions: f, Tools: f, Calls: f})
	arrived := make(chan struct{}, 16)
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case arrived <- struct{}{}:
			default:
			}
			next.ServeHTTP(w, r)
		})
	})
	ep.Mount(r)
	ts := httptest.NewServer(r)
	ep.Start()
	t.Cleanup(func() {
		ep.Close()
		ts.Close()
	})

	got := make(chan []string, 1)
	go func() {
		cs := connect(t, ts.URL+"/mcp", "2026-07-28")
		got <- names(t, cs)
	}()
	<-arrived
	var listed []string
	select {
	case listed = <-got: // answered while the first listing was still going on
	case <-time.After(200 * time.Millisecond):
		close(f.viewHeld)
		listed = <-got
	}
	if !slices.Contains(listed, "echo") || !slices.Contains(listed, "look__"+sessionA[len(sessionA)-12:]) {
		t.Fatalf("tools/list as the gateway starts: %v; want echo and the session's look", listed)
	}
}
