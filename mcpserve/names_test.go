package mcpserve_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpserve"
)

const (
	sessionA = "019ab0c1-2d3e-7f40-8a5b-6c7d8e9f0a1b"
	sessionB = "019ab0c1-2d3e-7f40-9999-6c7d8e9f0a1c"
)

// A session's tool is named <tool>__<last 12 hex digits>; when another
// tool holds that name as it comes, it gets <tool>__<all 32>, and keeps it
// while listed, even once the short name is free again.
func TestNamesUniqueAndStable(t *testing.T) {
	f := newFakeEngine()
	short := "echo__6c7d8e9f0a1b"
	long := "echo__" + strings.ReplaceAll(sessionA, "-", "")
	f.setGateway(tool(short)) // an imported tool that happens to hold the name
	_, url := serve(t, f, mcpserve.Options{})
	cs := connect(t, url+"/mcp", "2026-07-28")
	f.setSession(sessionA, tool("echo"))
	testwait.Until(t, 10*time.Second, "the session's tool listed", func() bool { return slices.Contains(names(t, cs), long) })
	if got := names(t, cs); !slices.Equal(got, []string{long, short}) {
		t.Fatalf("listed %v", got)
	}

	f.setGateway()
	testwait.Until(t, 10*time.Second, "the gateway tool gone", func() bool { return len(names(t, cs)) == 1 })
	f.setSession(sessionA, tool("echo"), tool("ping"))
	testwait.Until(t, 10*time.Second, "the second tool listed", func() bool { return len(names(t, cs)) == 2 })
	if got := names(t, cs); !slices.Equal(got, []string{long, "ping__6c7d8e9f0a1b"}) {
		t.Errorf("after the short name was freed: %v (the listed tool must keep its name)", got)
	}

	f.setSession(sessionB, tool("echo"))
	testwait.Until(t, 10*time.Second, "the other session's tool listed", func() bool { return len(names(t, cs)) == 3 })
	if got := names(t, cs); !slices.Contains(got, "echo__6c7d8e9f0a1c") {
		t.Errorf("the second session's tool: %v", got)
	}
}

// A session open before Start is listed (Start lists every open
// session); its tool's definition says whose it is, keeps its schema's
// bytes, and marks a read-only tool readOnlyHint.
func TestToolDefinition(t *testing.T) {
	f := newFakeEngine()
	look := tool("look")
	look.Description = "Looks around"
	look.ReadOnly = true
	look.Parameters = []byte(`{"type":"object","properties":{"where":{"type":"string"}}}`)
	f.setSession(sessionA, look)
	_, url := serve(t, f, mcpserve.Options{})
	cs := connect(t, url+"/mcp", "2025-11-25")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 {
		t.Fatalf("listed %d tools", len(res.Tools))
	}
	got := res.Tools[0]
	if got.Name != "look__6c7d8e9f0a1b" || got.Description != "Looks around\n\n[toolgate: a tool of unit, session "+sessionA+"]" {
		t.Errorf("name %q, description %q", got.Name, got.Description)
	}
	if got.Annotations == nil || !got.Annotations.ReadOnlyHint {
		t.Errorf("annotations %+v, want readOnlyHint", got.Annotations)
	}
	schema, _ := json.Marshal(got.InputSchema)
	if string(schema) != `{"properties":{"where":{"type":"string"}},"type":"object"}` {
		t.Errorf("inputSchema %s", schema)
	}
	if got.Meta["io.toolgate/tool"] != "look" {
		t.Errorf("_meta %v", got.Meta)
	}
}

// Every name on /mcp is at most 64 characters of [A-Za-z0-9_-], for a
// 64-character client tool name too; two such names alike in their first
// 41 characters stay apart; a gateway name with characters outside the
// set (or too long) is mapped; and the names are a function of the
// session and the tool alone: listed the other way round, on another
// endpoint (a restart), they are the same.
func TestNamesFitHosts(t *testing.T) {
	long1 := strings.Repeat("a", 63) + "1"
	long2 := strings.Repeat("a", 63) + "2"
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	listing := func(first, second func(*fakeEngine)) []string {
		f := newFakeEngine()
		first(f)
		second(f)
		_, url := serve(t, f, mcpserve.Options{})
		cs := connect(t, url+"/mcp", "2025-11-25")
		var got []string
		testwait.Until(t, 10*time.Second, "every tool listed", func() bool {
			got = names(t, cs)
			return len(got) == 5
		})
		return got
	}
	sessionTools := func(f *fakeEngine) { f.setSession(sessionA, tool(long1), tool(long2), tool("echo")) }
	gatewayTools := func(f *fakeEngine) { f.setGateway(tool("files.read"), tool("ünï-"+strings.Repeat("x", 70))) }
	got := listing(sessionTools, gatewayTools)
	for _, name := range got {
		if !valid.MatchString(name) {
			t.Errorf("listed name %q (%d characters) is not [A-Za-z0-9_-]{1,64}", name, len(name))
		}
	}
	// docs/PROTOCOL.md's example: 41 characters of the name, 8 hex digits
	// of its SHA-256, the session's 12.
	if !slices.Contains(got, strings.Repeat("a", 41)+"_7359adfa__6c7d8e9f0a1b") {
		t.Errorf("the 64-character name of PROTOCOL's example is not listed as it says: %v", got)
	}
	if !slices.Contains(got, "echo__6c7d8e9f0a1b") {
		t.Errorf("a short name is not kept as it was: %v", got)
	}
	if again := listing(gatewayTools, sessionTools); !slices.Equal(again, got) {
		t.Errorf("listed in the other order: %v, first %v", again, got)
	}
}
