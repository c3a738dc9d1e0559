package server_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// sessionPage is the part of a GET /v1/sessions page the tests read.
type sessionPage struct {
	Sessions []struct {
		ID       string `json:"session_id"`
		Metadata struct {
			N int `json:"n"`
		} `json:"metadata"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"sessions"`
	NextBefore *string `json:"next_before"`
}

// TestSessionListIsPaged: GET /v1/sessions returns the open sessions
// newest first, limit at a time, each once, with next_before leading to
// the next page and null on the last; a closed session is not listed;
// each session carries its metadata and tools. (The finding: the list was
// every open session with its metadata, 322 MB, polled every 4 s.)
func TestSessionListIsPaged(t *testing.T) {
	g := startGateway(t, nil)
	var ids []string // oldest first
	for i := range 7 {
		var s session
		g.call("POST", "/v1/sessions", "", fmt.Sprintf(`{"metadata":{"n":%d}}`, i), 201, &s)
		g.register(s, echoTool)
		ids = append(ids, s.ID)
		if i == 3 {
			g.call("POST", "/v1/sessions/"+s.ID+"/close", s.Token, nil, 200, nil)
		}
	}
	var want []string // the open ones, newest first
	for i := len(ids) - 1; i >= 0; i-- {
		if i != 3 {
			want = append(want, ids[i])
		}
	}

	var got []string
	before, pages := "", 0
	for {
		var page sessionPage
		g.call("GET", "/v1/sessions?limit=2&before="+before, testAgentKey, nil, 200, &page)
		pages++
		if len(page.Sessions) > 2 {
			t.Fatalf("a page of limit 2 has %d sessions", len(page.Sessions))
		}
		for _, s := range page.Sessions {
			got = append(got, s.ID)
			if n := slices.Index(ids, s.ID); s.Metadata.N != n || len(s.Tools) != 1 || s.Tools[0].Name != "echo" {
				t.Errorf("session %d listed with metadata n=%d and tools %v", n, s.Metadata.N, s.Tools)
			}
		}
		if page.NextBefore == nil {
			break
		}
		before = *page.NextBefore
		if pages > 10 {
			t.Fatal("the pages never end")
		}
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("paged through %d pages: %v\nwant the open sessions newest first in 3: %v", pages, got, want)
	}

	var all sessionPage
	g.call("GET", "/v1/sessions", testAgentKey, nil, 200, &all)
	if len(all.Sessions) != 6 || all.NextBefore != nil {
		t.Errorf("the default page: %d sessions, next %v; want all 6, no next", len(all.Sessions), all.NextBefore)
	}
	for _, q := range []string{"before=not-an-id", "limit=0", "limit=-1", "limit=x"} {
		if status, body := g.do("GET", "/v1/sessions?"+q, testAgentKey, nil); status != 400 {
			t.Errorf("GET /v1/sessions?%s: %d %s, want 400", q, status, body)
		}
	}
	g.call("GET", "/v1/sessions?limit=100000", testAgentKey, nil, 200, nil) // capped, not refused
}

// toolPage is the part of a GET /api/tools page the tests read.
type toolPage struct {
	Tools []struct {
		Name   string `json:"name"`
		Source struct {
			Kind      string `json:"kind"`
			SessionID string `json:"session_id"`
		} `json:"source"`
		Online bool `json:"online"`
	} `json:"tools"`
	NextAfter *string `json:"next_after"`
}

func (p toolPage) keys() []string {
	var keys []string
	for _, t := range p.Tools {
		keys = append(keys, t.Source.SessionID+"/"+t.Name)
	}
	return keys
}

// TestToolListIsPaged: GET /api/tools without session_id pages every
// tool — built-in ones first by name, then the newest session's first,
// each session's by name — limit
// at a time, each once, with next_after; with session_id it gives all of
// that session's tools and takes no paging.
func TestToolListIsPaged(t *testing.T) {
	g := startGateway(t, nil)
	var builtins toolPage
	g.call("GET", "/api/tools", testAgentKey, nil, 200, &builtins)
	if len(builtins.Tools) == 0 || builtins.Tools[0].Source.Kind != "builtin" {
		t.Fatalf("a gateway without sessions lists %v, want its built-in tools", builtins.keys())
	}
	var want []string
	for _, t := range builtins.Tools {
		want = append(want, "/"+t.Name)
	}
	var sessions []session
	for range 3 {
		s := g.newSession("lister")
		sessions = append(sessions, s)
		g.register(s, echoTool, map[string]any{"name": "alpha", "description": "first", "parameters": map[string]any{"type": "object"}})
	}
	closed := g.newSession("closed")
	g.register(closed, echoTool)
	g.call("POST", "/v1/sessions/"+closed.ID+"/close", closed.Token, nil, 200, nil)
	slices.SortFunc(sessions, func(a, b session) int { return strings.Compare(b.ID, a.ID) }) // newest first
	for _, s := range sessions {
		want = append(want, s.ID+"/alpha", s.ID+"/echo")
	}

	for _, limit := range []int{1, 2, 3, len(want), len(want) + 1} {
		var got []string
		after, pages := "", 0
		for {
			var page toolPage
			g.call("GET", fmt.Sprintf("/api/tools?limit=%d&after=%s", limit, url.QueryEscape(after)), testAgentKey, nil, 200, &page)
			if len(page.Tools) > limit {
				t.Fatalf("a page of limit %d has %d tools", limit, len(page.Tools))
			}
			got = append(got, page.keys()...)
			if pages++; page.NextAfter == nil || pages > 20 {
				break
			}
			after = *page.NextAfter
		}
		if !slices.Equal(got, want) {
			t.Errorf("paged by %d: %v\nwant %v", limit, got, want)
		}
	}

	var one toolPage
	g.call("GET", "/api/tools?session_id="+sessions[1].ID, testAgentKey, nil, 200, &one)
	if k := one.keys(); !slices.Equal(k, []string{sessions[1].ID + "/alpha", sessions[1].ID + "/echo"}) || one.NextAfter != nil {
		t.Errorf("one session's tools: %v, next %v", k, one.NextAfter)
	}
	for _, q := range []string{
		"after=nonsense", "after=not-a-uuid/echo", "after=" + url.QueryEscape(sessions[0].ID+"/"), "limit=0",
		"session_id=" + sessions[0].ID + "&limit=5", "session_id=" + sessions[0].ID + "&after=" + url.QueryEscape("/x"),
	} {
		if status, body := g.do("GET", "/api/tools?"+q, testAgentKey, nil); status != 400 {
			t.Errorf("GET /api/tools?%s: %d %s, want 400", q, status, body)
		}
	}
}
