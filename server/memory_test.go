package server_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

// scriptByInput is a model that plays, for each run's input (its first
// message), a list of turns of tool calls, one turn per request, and
// then answers with "done: " and the tool messages' contents joined by
// " | ". An input it has no script for is answered at once.
func scriptByInput(scripts map[string][][]chatToolCall) func(chatRequest) modelTurn {
	return func(req chatRequest) modelTurn {
		turns := scripts[req.Messages[0].Text()]
		asked := 0
		var parts []string
		for _, msg := range req.Messages {
			if msg.Role == "assistant" && len(msg.ToolCalls) > 0 {
				asked++
			}
			if msg.Role == "tool" {
				parts = append(parts, msg.Text())
			}
		}
		if asked < len(turns) {
			return modelTurn{ToolCalls: turns[asked]}
		}
		return modelTurn{Content: "done: " + strings.Join(parts, " | ")}
	}
}

// memoryCall calls a memory tool with POST /v1/calls (the agent's notes)
// and returns the call's record.
func (g *gateway) memoryCall(tool string, args any) callRecord {
	g.t.Helper()
	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": tool, "args": args}, 200, &rec)
	return rec
}

// memorySearchKeys returns the keys memory_search answered, in its order.
func (g *gateway) memorySearchKeys(args any) []string {
	g.t.Helper()
	rec := g.memoryCall("memory_search", args)
	var found struct {
		Notes []struct {
			Key string `json:"key"`
		} `json:"notes"`
	}
	if err := json.Unmarshal(rec.Output, &found); rec.Status != "completed" || err != nil {
		g.t.Fatalf("memory_search %v = %+v %s", args, rec, rec.Output)
	}
	keys := []string{}
	for _, n := range found.Notes {
		keys = append(keys, n.Key)
	}
	return keys
}

// TestMemoryAcrossRuns: run 1 writes a note with memory_write; a later
// run 2, with a fresh conversation, finds it with memory_search and reads
// it whole with memory_read, and the model sees its text. The note is a
// row of the memories table, readable with SQL; every memory call is
// stored like any other call.
func TestMemoryAcrossRuns(t *testing.T) {
	m := startFakeModel(t, scriptByInput(map[string][][]chatToolCall{
		"remember where the user lives": {
			{callTool("w1", "memory_write", `{"key":"user/home","text":"The user lives in Lisbon and rides tram 28 to work."}`)},
		},
		"which tram does the user take?": {
			{callTool("s1", "memory_search", `{"query":"user's tram"}`)},
			{callTool("r1", "memory_read", `{"key":"user/home"}`)},
		},
	}))
	g := modelGateway(t, m, nil)

	var first runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "remember where the user lives"}, 200, &first)
	if first.Status != "finished" || !strings.Contains(first.Output, `"created":true`) || len(first.Calls) != 1 || first.Calls[0].Tool != "memory_write" {
		t.Fatalf("run 1 = %+v", first)
	}

	var second runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "which tram does the user take?"}, 200, &second)
	if second.Status != "finished" || len(second.Calls) != 2 {
		t.Fatalf("run 2 = %+v", second)
	}
	for _, c := range second.Calls {
		if c.Status != "completed" || c.SessionID != "" {
			t.Fatalf("run 2 call = %+v", c)
		}
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	var toolMessages []string
	for _, msg := range last.Messages {
		if msg.Role == "tool" {
			toolMessages = append(toolMessages, msg.Text())
		}
	}
	if last.Messages[0].Text() != "which tram does the user take?" || len(toolMessages) != 2 {
		t.Fatalf("run 2's last request = %+v", last.Messages)
	}
	var found struct {
		Notes []struct{ Key, Text string } `json:"notes"`
	}
	if err := json.Unmarshal([]byte(toolMessages[0]), &found); err != nil || len(found.Notes) != 1 ||
		found.Notes[0].Key != "user/home" || !strings.Contains(found.Notes[0].Text, "tram 28") {
		t.Fatalf("memory_search as the model saw it = %s (%v)", toolMessages[0], err)
	}
	var read struct {
		Found bool   `json:"found"`
		Text  string `json:"text"`
	}
	if err := json.Unmarshal([]byte(toolMessages[1]), &read); err != nil || !read.Found || read.Text != "The user lives in Lisbon and rides tram 28 to work." {
		t.Fatalf("memory_read as the model saw it = %s (%v)", toolMessages[1], err)
	}

	var rows []struct {
		Scope string `db:"scope"`
		Key   string `db:"key"`
		Text  string `db:"text"`
	}
	if err := g.db(t).Select(&rows, `SELECT scope, key, text FROM memories`); err != nil || len(rows) != 1 ||
		rows[0].Scope != "" || rows[0].Key != "user/home" || !strings.Contains(rows[0].Text, "Lisbon") {
		t.Fatalf("memories rows = %+v (%v)", rows, err)
	}
	var calls int
	if err := g.db(t).Get(&calls, `SELECT COUNT(*) FROM call_history WHERE tool LIKE 'memory_%' AND status = 'completed'`); err != nil || calls != 3 {
		t.Fatalf("memory calls in call_history = %d (%v), want 3", calls, err)
	}
}

// TestMemoryToolsThroughCalls: the three tools are listed as built-ins
// (memory_read and memory_search read-only); memory_search through the
// gateway puts the note holding more of the query's words first, takes
// hostile queries as plain words, cuts long texts (memory_read gives them
// whole) and refuses a query without words as a failed call
// (INVALID_ARGS); arguments outside the schema are 422 and store nothing.
func TestMemoryToolsThroughCalls(t *testing.T) {
	g := startGateway(t, nil)
	var tools struct {
		Tools []struct {
			Name     string `json:"name"`
			ReadOnly bool   `json:"read_only"`
			Source   struct {
				Kind string `json:"kind"`
			} `json:"source"`
		} `json:"tools"`
	}
	g.call("GET", "/api/tools", testAgentKey, nil, 200, &tools)
	readOnly := map[string]bool{}
	for _, tool := range tools.Tools {
		if strings.HasPrefix(tool.Name, "memory_") && tool.Source.Kind == "builtin" {
			readOnly[tool.Name] = tool.ReadOnly
		}
	}
	if len(readOnly) != 3 || readOnly["memory_write"] || !readOnly["memory_read"] || !readOnly["memory_search"] {
		t.Fatalf("memory tools listed = %v", readOnly)
	}

	for i, text := range []string{
		"standup at nine every weekday", "the standup moved online", "retro on fridays",
		"budget review in march", "offsite planning", "hiring plan for q3",
	} {
		g.memoryCall("memory_write", map[string]any{"key": "filler-" + string(rune('a'+i)), "text": text})
	}
	notes := map[string]string{
		"vpn":      "Connect to the VPN before opening the staging dashboard.",
		"staging":  "The staging dashboard password rotates monthly; the VPN is required.",
		"password": "Password manager: the team vault.",
	}
	for key, text := range notes {
		if rec := g.memoryCall("memory_write", map[string]any{"key": key, "text": text}); rec.Status != "completed" || string(rec.Output) != `{"key":"`+key+`","created":true}` {
			t.Fatalf("memory_write %s = %+v %s", key, rec, rec.Output)
		}
	}
	if keys := g.memorySearchKeys(map[string]any{"query": "staging dashboard VPN password"}); !slices.Equal(keys, []string{"staging", "vpn", "password"}) {
		t.Fatalf("ranking = %v, want staging, vpn, password", keys)
	}
	if keys := g.memorySearchKeys(map[string]any{"query": "staging dashboard VPN password", "limit": 1}); !slices.Equal(keys, []string{"staging"}) {
		t.Fatalf("limit 1 = %v", keys)
	}
	for _, q := range []string{`"vault`, `vault*`, `NEAR(vault`, `vault AND`, `-vault`, `key:vault`, `'vault' | !x`, `vault:*`} {
		if keys := g.memorySearchKeys(map[string]any{"query": q}); !slices.Equal(keys, []string{"password"}) {
			t.Fatalf("query %q = %v", q, keys)
		}
	}

	// A long note: cut in search results, whole with memory_read.
	long := strings.Repeat("lighthouse ", 400) // 4,400 characters
	g.memoryCall("memory_write", map[string]any{"key": "long", "text": long})
	rec := g.memoryCall("memory_search", map[string]any{"query": "lighthouse"})
	var found struct {
		Notes []struct {
			Text      string `json:"text"`
			Truncated bool   `json:"truncated"`
		} `json:"notes"`
	}
	if err := json.Unmarshal(rec.Output, &found); err != nil || len(found.Notes) != 1 || !found.Notes[0].Truncated || len(found.Notes[0].Text) != 2000 {
		t.Fatalf("long note in search = %d notes (%v)", len(found.Notes), err)
	}
	rec = g.memoryCall("memory_read", map[string]any{"key": "long"})
	var read struct {
		Found bool   `json:"found"`
		Text  string `json:"text"`
	}
	if err := json.Unmarshal(rec.Output, &read); err != nil || !read.Found || read.Text != long {
		t.Fatalf("memory_read long = %v %d", read.Found, len(read.Text))
	}
	if rec := g.memoryCall("memory_read", map[string]any{"key": "never written"}); rec.Status != "completed" || string(rec.Output) != `{"key":"never written","found":false}` {
		t.Fatalf("memory_read of a missing key = %+v %s", rec, rec.Output)
	}

	// Refusals of the tool: failed calls saying why.
	for _, c := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{"memory_search", map[string]any{"query": `"" * ( ) :`}, "no word"},
		{"memory_write", map[string]any{"key": "k", "text": "a\x00b"}, "NUL"},
		{"memory_write", map[string]any{"key": "k", "text": strings.Repeat("x", 16<<10+1)}, "at most 16384"},
	} {
		rec := g.memoryCall(c.tool, c.args)
		if rec.Status != "failed" || rec.Error == nil || rec.Error.Code != "INVALID_ARGS" || !strings.Contains(rec.Error.Message, c.says) {
			t.Fatalf("%s %v = %+v", c.tool, c.args, rec)
		}
	}
	// Arguments the schema refuses: 422, no call stored.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"memory_write", map[string]any{"key": strings.Repeat("k", 201), "text": "x"}},
		{"memory_write", map[string]any{"key": "k"}},
		{"memory_write", map[string]any{"key": "k", "text": "x", "scope": "someone-else"}},
		{"memory_read", map[string]any{"key": ""}},
		{"memory_search", map[string]any{"query": "x", "limit": 21}},
		{"memory_search", map[string]any{"query": strings.Repeat("q", 501)}},
	} {
		status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": c.tool, "args": c.args})
		if status != 422 || errorCode(body) != "INVALID_ARGS" {
			t.Fatalf("%s %v: %d %s", c.tool, c.args, status, body)
		}
	}
	var rows int
	if err := g.db(t).Get(&rows, `SELECT COUNT(*) FROM memories WHERE key = 'k'`); err != nil || rows != 0 {
		t.Fatalf("refused writes stored %d notes (%v)", rows, err)
	}
}

// TestMemorySessionScope: a run started with a session's token reads and
// writes that session's notes only: it finds none of the agent's notes
// nor another session's, and its own stay out of the agent's and the
// other session's sight, yet a later run of the same session finds them.
func TestMemorySessionScope(t *testing.T) {
	m := startFakeModel(t, scriptByInput(map[string][][]chatToolCall{
		"look around": {{
			callTool("s", "memory_search", `{"query":"launch codes alpha"}`),
			callTool("r", "memory_read", `{"key":"agent-secret"}`),
		}},
		"note mine": {{callTool("w", "memory_write", `{"key":"mine","text":"alpha session note"}`)}},
		"read mine": {{callTool("r", "memory_read", `{"key":"mine"}`)}},
	}))
	g := modelGateway(t, m, nil)
	s, other := g.newSession("mine"), g.newSession("theirs")
	g.memoryCall("memory_write", map[string]any{"key": "agent-secret", "text": "the launch codes are 0000"})

	sessionRun := func(sess session, input string) runRecord {
		t.Helper()
		var run runRecord
		g.call("POST", "/v1/sessions/"+sess.ID+"/runs", sess.Token, map[string]any{"input": input}, 200, &run)
		if run.Status != "finished" {
			t.Fatalf("%s run %q = %+v", sess.ID, input, run)
		}
		return run
	}
	const nothing = `done: {"notes":[]} | {"key":"agent-secret","found":false}`
	if run := sessionRun(s, "look around"); run.Output != nothing {
		t.Fatalf("a session's run saw the agent's notes: %s", run.Output)
	}
	if run := sessionRun(s, "note mine"); run.Output != `done: {"key":"mine","created":true}` {
		t.Fatalf("session note = %s", run.Output)
	}
	if run := sessionRun(other, "look around"); run.Output != nothing {
		t.Fatalf("another session's run saw notes: %s", run.Output)
	}
	if run := sessionRun(other, "read mine"); run.Output != `done: {"key":"mine","found":false}` {
		t.Fatalf("another session's run read the note: %s", run.Output)
	}
	if run := sessionRun(s, "read mine"); !strings.Contains(run.Output, `"found":true`) || !strings.Contains(run.Output, "alpha session note") {
		t.Fatalf("the session's own later run = %s", run.Output)
	}
	// The agent key's runs and calls keep their own notes.
	if keys := g.memorySearchKeys(map[string]any{"query": "alpha launch codes"}); !slices.Equal(keys, []string{"agent-secret"}) {
		t.Fatalf("the agent's search = %v", keys)
	}
	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "read mine"}, 200, &run)
	if run.Output != `done: {"key":"mine","found":false}` {
		t.Fatalf("an agent-key run read a session's note: %s", run.Output)
	}

	var scopes []string
	if err := g.db(t).Select(&scopes, `SELECT scope FROM memories ORDER BY key`); err != nil || !slices.Equal(scopes, []string{"", s.ID}) {
		t.Fatalf("scopes = %v (%v), want the agent's and %s", scopes, err, s.ID)
	}
}

// readmeMemoryBlock returns the built-in tools guide's block that follows the "memory
// sql" marker.
func readmeMemoryBlock(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "guides", "builtin-tools.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "<!-- memory sql")
	if !ok {
		t.Fatal("docs/guides/builtin-tools.md has no memory sql block")
	}
	_, block, _ := strings.Cut(after, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	return block
}

// TestMemoryReadmeQueries runs the guide's SQL on notes: each query
// through the driver, and the whole block through the sqlite3 shell when
// installed; the search query ranks the notes as memory_search does. A
// note deleted with SQL leaves memory_search's results (the triggers keep
// the full-text index in step).
func TestMemoryReadmeQueries(t *testing.T) {
	g := startGateway(t, nil)
	for _, n := range [][2]string{
		{"lunch", "Lunch is at noon."},
		{"printer", "The printer jams."},
		{"toner", "Order printer toner, blue toner first."},
		{"coffee", "The coffee machine is on floor three."},
		{"holidays", "The office closes in August."},
	} {
		g.memoryCall("memory_write", map[string]any{"key": n[0], "text": n[1]})
	}
	block := readmeMemoryBlock(t)
	queries := regexp.MustCompile(`"(SELECT [^"]+)"`).FindAllStringSubmatch(block, -1)
	if len(queries) != 2 {
		t.Fatalf("the guide's memory block has %d queries, want 2:\n%s", len(queries), block)
	}
	db := sqlx.MustOpen("sqlite", "file:"+g.DBPath+"?_pragma=busy_timeout(5000)")
	defer db.Close()
	var all []map[string]any
	rows, err := db.Queryx(queries[0][1])
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		row := map[string]any{}
		if err := rows.MapScan(row); err != nil {
			t.Fatal(err)
		}
		all = append(all, row)
	}
	rows.Close()
	if len(all) != 5 || all[0]["updated"] == nil {
		t.Fatalf("listing query = %v", all)
	}
	var ranked []string
	if err := db.Select(&ranked, strings.Replace(queries[1][1], "SELECT m.key, m.text", "SELECT m.key", 1)); err != nil || !slices.Equal(ranked, []string{"toner", "printer"}) {
		t.Fatalf("search query = %v (%v), want toner, printer", ranked, err)
	}
	if keys := g.memorySearchKeys(map[string]any{"query": "printer toner"}); !slices.Equal(keys, ranked) {
		t.Fatalf("memory_search = %v, the guide's query %v", keys, ranked)
	}

	if _, err := exec.LookPath("sqlite3"); err == nil {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
		cmd.Env = append(os.Environ(), "DB="+g.DBPath)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "holidays") || !strings.Contains(string(out), "toner|Order printer toner") {
			t.Fatalf("the guide's block in the sqlite3 shell: %v\n%s", err, out)
		}
	}

	if _, err := db.Exec(`DELETE FROM memories WHERE scope = '' AND key = 'toner'`); err != nil {
		t.Fatal(err)
	}
	if keys := g.memorySearchKeys(map[string]any{"query": "printer toner"}); !slices.Equal(keys, []string{"printer"}) {
		t.Fatalf("memory_search after a SQL delete = %v", keys)
	}
}
