package agentloop

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
)

// The memory tools keep notes across runs: memory_write stores a note
// under a key, memory_read reads one back by its key, memory_search finds
// notes by the words they hold, the best matches first.
//
// Whose notes they are is decided here, not by the model: a run started
// with a session's token (CallerSession) reads and writes that session's
// notes only; runs started with the agent key and direct calls (POST
// /v1/calls) share the agent's own notes. No argument names a scope, so
// no run can reach another's notes.

// MemoryNote is one note as the memory tools see it.
type MemoryNote struct {
	Key       string
	Text      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MemoryStore keeps the notes; the server implements it on its database.
// scope is "" for the agent's own notes, else the id of the session whose
// notes they are. Its errors are the tools' (a *toolgate.Error such as
// INVALID_ARGS for a key out of bounds).
type MemoryStore interface {
	// WriteMemory stores text as the note key of scope, replacing the
	// note of that key if there is one, and reports whether it is new.
	WriteMemory(ctx context.Context, scope, key, text string) (created bool, err error)
	// ReadMemory returns the note key of scope; nil when there is none.
	ReadMemory(ctx context.Context, scope, key string) (*MemoryNote, error)
	// SearchMemory returns up to limit notes of scope holding any word of
	// query, the best matches first.
	SearchMemory(ctx context.Context, scope, query string, limit int) ([]MemoryNote, error)
}

// NewMemoryTools returns memory_write, memory_read and memory_search on m.
func NewMemoryTools(m MemoryStore) []toolgate.Tool {
	return []toolgate.Tool{NewMemoryWriteTool(m), NewMemoryReadTool(m), NewMemorySearchTool(m)}
}

// memoryScope is whose notes a tool running with ctx reads and writes.
func memoryScope(ctx context.Context) string { return toolgate.CallerSession(ctx) }

// MemoryWriteArgs are the arguments of memory_write.
type MemoryWriteArgs struct {
	Key  string `json:"key" jsonschema:"minLength=1,maxLength=200,description=the note's name (at most 200 characters); writing to an existing key replaces that note"`
	Text string `json:"text" jsonschema:"minLength=1,description=what to remember (at most 16 KiB)"`
}

// MemoryWritten is memory_write's output.
type MemoryWritten struct {
	Key     string `json:"key"`
	Created bool   `json:"created"` // false: the note of that key was replaced
}

// NewMemoryWriteTool returns memory_write: store a note under a key, kept
// across runs.
func NewMemoryWriteTool(m MemoryStore) *FuncTool[MemoryWriteArgs] {
	return NewFuncTool("memory_write",
		"Remember a note across runs: store text under a key (writing to an existing key replaces its note). Find notes later with memory_search or memory_read.",
		func(ctx context.Context, a MemoryWriteArgs) (any, error) {
			created, err := m.WriteMemory(ctx, memoryScope(ctx), a.Key, a.Text)
			if err != nil {
				return nil, err
			}
			return MemoryWritten{Key: a.Key, Created: created}, nil
		})
}

// MemoryReadArgs are the arguments of memory_read.
type MemoryReadArgs struct {
	Key string `json:"key" jsonschema:"minLength=1,maxLength=200,description=the note's key"`
}

// MemoryRead is memory_read's output: Found is false, and the rest empty,
// when no note has the key (an answer, not an error).
type MemoryRead struct {
	Key       string `json:"key"`
	Found     bool   `json:"found"`
	Text      string `json:"text,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
}

// NewMemoryReadTool returns memory_read: the note of a key, whole.
func NewMemoryReadTool(m MemoryStore) *FuncTool[MemoryReadArgs] {
	t := NewFuncTool("memory_read",
		"Read the note stored under a key with memory_write, whole; found is false when there is none.",
		func(ctx context.Context, a MemoryReadArgs) (any, error) {
			note, err := m.ReadMemory(ctx, memoryScope(ctx), a.Key)
			if err != nil {
				return nil, err
			}
			if note == nil {
				return MemoryRead{Key: a.Key}, nil
			}
			return MemoryRead{Key: note.Key, Found: true, Text: note.Text,
				CreatedAt: noteTime(note.CreatedAt), UpdatedAt: noteTime(note.UpdatedAt)}, nil
		})
	t.IsReadOnly = true
	// A note's text often came from outside (a page or a client's output
	// the model copied): read back, it passes the safety step, so that
	// an injection saved in one run is flagged again in the next.
	t.ReachesOutside = true
	return t
}

// Bounds of memory_search (the store refuses a limit above its own
// maximum, 20, with INVALID_ARGS).
const (
	// DefaultMemoryResults is how many notes memory_search returns when
	// its limit is left out.
	DefaultMemoryResults = 5
	// MaxMemoryExcerpt is the longest text of a note memory_search
	// returns, in characters; a longer one is cut (Truncated), and
	// memory_read returns it whole. Twenty results stay a few pages of
	// the model's context.
	MaxMemoryExcerpt = 2000
)

// MemorySearchArgs are the arguments of memory_search.
type MemorySearchArgs struct {
	Query string `json:"query" jsonschema:"minLength=1,maxLength=500,description=words to look for in the notes' keys and texts; a note holding more of them comes first. Plain words: quotes and operators are ignored"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=20,description=how many notes at most (default 5)"`
}

// MemoryMatch is one note memory_search found.
type MemoryMatch struct {
	Key       string `json:"key"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"` // Text is the note's first MaxMemoryExcerpt characters
	UpdatedAt string `json:"updated_at"`
}

// MemoryFound is memory_search's output, the best matches first.
type MemoryFound struct {
	Notes []MemoryMatch `json:"notes"`
}

// NewMemorySearchTool returns memory_search: the notes holding words of
// a query, the best matches first.
func NewMemorySearchTool(m MemoryStore) *FuncTool[MemorySearchArgs] {
	t := NewFuncTool("memory_search",
		"Search the notes stored with memory_write by words, best matches first, with their keys and texts (a long text is cut: read it whole with memory_read).",
		func(ctx context.Context, a MemorySearchArgs) (any, error) {
			if a.Limit == 0 {
				a.Limit = DefaultMemoryResults
			}
			notes, err := m.SearchMemory(ctx, memoryScope(ctx), a.Query, a.Limit)
			if err != nil {
				return nil, err
			}
			out := MemoryFound{Notes: make([]MemoryMatch, 0, len(notes))}
			for _, n := range notes {
				text, cut := excerpt(n.Text, MaxMemoryExcerpt)
				out.Notes = append(out.Notes, MemoryMatch{Key: n.Key, Text: text, Truncated: cut, UpdatedAt: noteTime(n.UpdatedAt)})
			}
			return out, nil
		})
	t.IsReadOnly = true
	t.ReachesOutside = true // as memory_read's
	return t
}

// excerpt returns text's first max characters, and whether it was cut.
func excerpt(text string, max int) (string, bool) {
	if utf8.RuneCountInString(text) <= max {
		return text, false
	}
	n := 0
	for i := range text {
		if n == max {
			return text[:i], true
		}
		n++
	}
	return text, false
}

// noteTime is a note's time as the tools show it.
func noteTime(t time.Time) string { return toolgate.NewTime(t).String() }
