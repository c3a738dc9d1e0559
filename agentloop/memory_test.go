package agentloop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
)

// fakeMemory is a MemoryStore whose methods are the test's functions.
type fakeMemory struct {
	write  func(scope, key, text string) (bool, error)
	read   func(scope, key string) (*MemoryNote, error)
	search func(scope, query string, limit int) ([]MemoryNote, error)
}

func (f fakeMemory) WriteMemory(_ context.Context, scope, key, text string) (bool, error) {
	return f.write(scope, key, text)
}

func (f fakeMemory) ReadMemory(_ context.Context, scope, key string) (*MemoryNote, error) {
	return f.read(scope, key)
}

func (f fakeMemory) SearchMemory(_ context.Context, scope, query string, limit int) ([]MemoryNote, error) {
	return f.search(scope, query, limit)
}

// TestMemoryToolsScope: the tools pass the caller's session as the
// scope ("" for the agent key), whatever the arguments say; search's
// limit defaults to 5.
func TestMemoryToolsScope(t *testing.T) {
	var scopes []string
	var limits []int
	m := fakeMemory{
		write: func(scope, _, _ string) (bool, error) { scopes = append(scopes, scope); return true, nil },
		read:  func(scope, _ string) (*MemoryNote, error) { scopes = append(scopes, scope); return nil, nil },
		search: func(scope, _ string, limit int) ([]MemoryNote, error) {
			scopes, limits = append(scopes, scope), append(limits, limit)
			return nil, nil
		},
	}
	tools := NewMemoryTools(m)
	args := []string{`{"key":"k","text":"t"}`, `{"key":"k"}`, `{"query":"q"}`}
	for _, ctx := range []context.Context{context.Background(), toolgate.WithCallerSession(context.Background(), "S1")} {
		for i, tool := range tools {
			if _, err := tool.Execute(ctx, json.RawMessage(args[i])); err != nil {
				t.Fatalf("%s: %v", tool.Name(), err)
			}
		}
	}
	if strings.Join(scopes, ",") != ",,,S1,S1,S1" || len(limits) != 2 || limits[0] != DefaultMemoryResults {
		t.Fatalf("scopes = %q, limits = %v", scopes, limits)
	}
	if _, err := tools[0].Execute(context.Background(), json.RawMessage(`{"key":"k","text":"t","scope":"S2"}`)); err == nil {
		t.Fatal("memory_write took a scope argument")
	}
}

// TestMemorySearchCutsOnCharacters: a long note comes back from
// memory_search as its first MaxMemoryExcerpt characters, valid UTF-8,
// marked truncated; a note of exactly that length whole.
func TestMemorySearchCutsOnCharacters(t *testing.T) {
	long := strings.Repeat("é", MaxMemoryExcerpt+10)
	exact := strings.Repeat("ü", MaxMemoryExcerpt)
	when := time.UnixMilli(1_700_000_000_000)
	m := fakeMemory{search: func(string, string, int) ([]MemoryNote, error) {
		return []MemoryNote{{Key: "long", Text: long, UpdatedAt: when}, {Key: "exact", Text: exact, UpdatedAt: when}}, nil
	}}
	res, err := NewMemorySearchTool(m).Execute(context.Background(), json.RawMessage(`{"query":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	var found MemoryFound
	if err := json.Unmarshal(res.Output, &found); err != nil || len(found.Notes) != 2 {
		t.Fatalf("output = %s (%v)", res.Output, err)
	}
	cut, whole := found.Notes[0], found.Notes[1]
	if !cut.Truncated || cut.Text != long[:2*MaxMemoryExcerpt] || !utf8.ValidString(cut.Text) {
		t.Fatalf("long note: truncated=%v, %d characters", cut.Truncated, utf8.RuneCountInString(cut.Text))
	}
	if whole.Truncated || whole.Text != exact || whole.UpdatedAt != "2023-11-14T22:13:20.000Z" {
		t.Fatalf("note of the excerpt's length: %+v", whole.UpdatedAt)
	}
}
