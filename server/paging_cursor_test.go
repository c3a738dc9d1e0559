package server_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestPagingCursorMustBeCanonical: before= of GET /v1/sessions and
// GET /v1/calls is an id as the gateway prints it (a lowercase UUID);
// the other spellings a UUID parser accepts (uppercase, braces, urn:uuid:,
// no hyphens) are refused with 400 rather than answered with a wrong page
// (uppercase sorted below every id gave an empty page, the others above
// every id gave the first page again).
func TestPagingCursorMustBeCanonical(t *testing.T) {
	g := startGateway(t, nil)
	first, second := g.newSession("a"), g.newSession("b")
	for _, path := range []string{"/v1/sessions", "/v1/calls"} {
		id := second.ID
		for _, bad := range []string{strings.ToUpper(id), "{" + id + "}", "urn:uuid:" + id, strings.ReplaceAll(id, "-", ""), " " + id} {
			status, body := g.do("GET", path+"?limit=1&before="+url.QueryEscape(bad), testAgentKey, nil)
			if status != 400 || errorCode(body) != "BAD_REQUEST" {
				t.Errorf("%s?before=%s: %d %s, want 400", path, bad, status, body)
			}
		}
	}
	var page struct {
		Sessions []struct {
			ID string `json:"session_id"`
		} `json:"sessions"`
	}
	g.call("GET", "/v1/sessions?limit=1&before="+second.ID, testAgentKey, nil, 200, &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != first.ID {
		t.Errorf("the page before the newest session: %+v, want %s", page.Sessions, first.ID)
	}
	if status, body := g.do("GET", "/v1/calls?before="+second.ID, testAgentKey, nil); status != 200 {
		t.Errorf("/v1/calls with a canonical cursor: %d %s", status, body)
	}
}
