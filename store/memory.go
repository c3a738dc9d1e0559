package store

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
)

// The agent's notes (table memories, migrations 0010 / postgres 0003):
// written, read and searched by the built-in memory tools, each scope's
// apart. The bounds below keep any one agent from growing the table, or
// a search, without end.
const (
	// MaxMemoryKey is the longest key, in characters.
	MaxMemoryKey = 200
	// MaxMemoryText is the longest note, in bytes of UTF-8 (16 KiB).
	MaxMemoryText = 16 << 10
	// MaxMemoryResults is the most notes one search returns.
	MaxMemoryResults = 20
	// MaxMemoryQuery is the longest search query, in characters.
	MaxMemoryQuery = 500
	// MaxMemoryTerms is the most distinct words a search query may hold.
	MaxMemoryTerms = 32
	// DefaultMaxMemoryNotes is the most notes one scope may hold unless
	// MemoryWrite.MaxNotes says otherwise.
	DefaultMaxMemoryNotes = 10_000
)

// MemoryRow is one note as stored.
type MemoryRow struct {
	Scope     string `db:"scope"` // "" for the agent's own notes, else a session id
	Key       string `db:"key"`
	Text      string `db:"text"`
	CreatedAt int64  `db:"created_at"` // Unix ms
	UpdatedAt int64  `db:"updated_at"` // Unix ms
}

// Created returns when the note was first written.
func (r *MemoryRow) Created() time.Time { return fromMS(r.CreatedAt) }

// Updated returns when the note was last written.
func (r *MemoryRow) Updated() time.Time { return fromMS(r.UpdatedAt) }

const memoryColumns = `scope, key, text, created_at, updated_at`

var (
	qMemoryExists = query(`SELECT COUNT(*) FROM memories WHERE scope = ? AND key = ?`)
	qMemoryCount  = query(`SELECT COUNT(*) FROM memories WHERE scope = ?`)
	qPutMemory    = query(`INSERT INTO memories (` + memoryColumns + `) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (scope, key) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at`)
	qGetMemory = query(`SELECT ` + memoryColumns + ` FROM memories WHERE scope = ? AND key = ?`)

	// The best matches first: bm25 is lower for a better match (more of
	// the query's words, rarer words, a shorter note); a word of the key
	// counts twice one of the text. (SQLite only: prepared at Open.)
	qSearchMemorySQLite = query(`SELECT m.scope, m.key, m.text, m.created_at, m.updated_at
		FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
		WHERE memories_fts MATCH ? AND m.scope = ?
		ORDER BY bm25(memories_fts, 2.0, 1.0), m.updated_at DESC, m.key LIMIT ?`)
)

// qSearchMemoryPostgres is the search on PostgreSQL, the best matches
// first: ts_rank sums the weights of the query's words a note holds (the
// key's above the text's), divided by 1 + log of its length; it does not
// know how rare a word is. Not registered with query: SQLite would fail
// to prepare it.
const qSearchMemoryPostgres = `SELECT scope, key, text, created_at, updated_at
	FROM memories, to_tsquery('simple', ?) q
	WHERE scope = ? AND search @@ q
	ORDER BY ts_rank(search, q, 1) DESC, updated_at DESC, key LIMIT ?`

// CheckMemoryKey returns why key cannot name a note, or nil: it must be
// 1 to MaxMemoryKey characters of plain text (toolgate.CheckPlainText).
func CheckMemoryKey(key string) error {
	if key == "" {
		return toolgate.Errorf(toolgate.EInvalidArgs, "key is empty: name the note")
	}
	if err := toolgate.CheckPlainText(key); err != nil {
		return toolgate.Errorf(toolgate.EInvalidArgs, "key %v", err)
	}
	if n := utf8.RuneCountInString(key); n > MaxMemoryKey {
		return toolgate.Errorf(toolgate.EInvalidArgs, "key is %d characters long; at most %d", n, MaxMemoryKey)
	}
	return nil
}

// checkMemoryText returns why text cannot be a note, or nil: 1 byte to
// MaxMemoryText bytes of plain text.
func checkMemoryText(text string) error {
	if text == "" {
		return toolgate.Errorf(toolgate.EInvalidArgs, "text is empty: a note needs text")
	}
	if len(text) > MaxMemoryText {
		return toolgate.Errorf(toolgate.EInvalidArgs, "text is %d bytes long; a note holds at most %d (16 KiB)", len(text), MaxMemoryText)
	}
	if err := toolgate.CheckPlainText(text); err != nil {
		return toolgate.Errorf(toolgate.EInvalidArgs, "text %v", err)
	}
	return nil
}

// MemoryWrite is a note to store with WriteMemory.
type MemoryWrite struct {
	Scope string // "" for the agent's own notes, else a session id
	Key   string
	Text  string
	Now   time.Time
	// MaxNotes is the most notes Scope may hold; 0 for
	// DefaultMaxMemoryNotes.
	MaxNotes int
}

// WriteMemory stores w.Text as the note w.Key of w.Scope: a new note, or
// the one of that key replaced (its created_at kept). It reports whether
// the note is new. A key or text out of bounds is INVALID_ARGS; a new key
// in a scope that holds MaxNotes notes already is CONFLICT, and nothing
// is stored.
func (s *Store) WriteMemory(ctx context.Context, w MemoryWrite) (created bool, err error) {
	if err := CheckMemoryKey(w.Key); err != nil {
		return false, err
	}
	if err := checkMemoryText(w.Text); err != nil {
		return false, err
	}
	if w.MaxNotes == 0 {
		w.MaxNotes = DefaultMaxMemoryNotes
	}
	return WriteValue(ctx, s, func(tx *Tx) (bool, error) { return tx.putMemory(w) })
}

// putMemory is WriteMemory's operation: the count of scope's notes and
// the write in one transaction, so that two writers cannot both take the
// last place.
func (tx *Tx) putMemory(w MemoryWrite) (bool, error) {
	if tx.pg != nil {
		// Other nodes write too: one writer of a scope's notes at a time,
		// until commit, so the count below stays true.
		if _, err := tx.exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, "memories/"+w.Scope); err != nil {
			return false, err
		}
	}
	var exists int
	if err := tx.get(&exists, qMemoryExists, w.Scope, w.Key); err != nil {
		return false, err
	}
	if exists == 0 {
		var notes int
		if err := tx.get(&notes, qMemoryCount, w.Scope); err != nil {
			return false, err
		}
		if notes >= w.MaxNotes {
			return false, Refuse(toolgate.Errorf(toolgate.EConflict,
				"%d notes are kept already, the most one agent (or one session's runs) may keep: replace an existing note (write to its key) instead of adding one, or ask the operator to delete old ones", notes))
		}
	}
	if _, err := tx.exec(qPutMemory, w.Scope, w.Key, w.Text, ms(w.Now), ms(w.Now)); err != nil {
		return false, err
	}
	return exists == 0, nil
}

// ReadMemory returns the note key of scope; nil when there is none.
func (s *Store) ReadMemory(ctx context.Context, scope, key string) (*MemoryRow, error) {
	if err := CheckMemoryKey(key); err != nil {
		return nil, err
	}
	var r MemoryRow
	return rowOrNil(&r, s.read.get(ctx, &r, qGetMemory, scope, key))
}

// CountMemories returns how many notes scope holds.
func (s *Store) CountMemories(ctx context.Context, scope string) (int, error) {
	var n int
	err := s.read.get(ctx, &n, qMemoryCount, scope)
	return n, err
}

// SearchMemory returns up to limit notes of scope that hold any word of
// query (in their key or text), the best matches first. The query is
// words, never the database's query syntax: it is split on anything but
// letters and digits, so quotes, operators and punctuation are only
// separators. A query without words, too long or with too many words, or
// a limit outside 1 to MaxMemoryResults, is INVALID_ARGS.
func (s *Store) SearchMemory(ctx context.Context, scope, query string, limit int) ([]MemoryRow, error) {
	if limit < 1 || limit > MaxMemoryResults {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "limit must be between 1 and %d", MaxMemoryResults)
	}
	terms, err := memoryTerms(query)
	if err != nil {
		return nil, err
	}
	rows := []MemoryRow{}
	if s.pg != nil {
		err = s.read.sel(ctx, &rows, qSearchMemoryPostgres, postgresAnyWord(terms), scope, limit)
	} else {
		err = s.read.sel(ctx, &rows, qSearchMemorySQLite, fts5AnyWord(terms), scope, limit)
	}
	return rows, err
}

// memoryTerms splits a search query into its distinct words (compared
// without case): runs of letters, digits and combining marks, what both
// databases' full-text indexes call words.
func memoryTerms(query string) ([]string, error) {
	if err := toolgate.CheckPlainText(query); err != nil {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "query %v", err)
	}
	if n := utf8.RuneCountInString(query); n > MaxMemoryQuery {
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "query is %d characters long; at most %d", n, MaxMemoryQuery)
	}
	words := strings.FieldsFunc(query, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
	seen := map[string]bool{}
	var terms []string
	for _, w := range words {
		if lower := strings.ToLower(w); !seen[lower] {
			seen[lower] = true
			terms = append(terms, w)
		}
	}
	switch {
	case len(terms) == 0:
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "query %q holds no word to search for (letters or digits)", query)
	case len(terms) > MaxMemoryTerms:
		return nil, toolgate.Errorf(toolgate.EInvalidArgs, "query holds %d distinct words; at most %d", len(terms), MaxMemoryTerms)
	}
	return terms, nil
}

// fts5AnyWord is the FTS5 query matching a note that holds any of terms:
// each a string in double quotes (a double quote inside one doubled),
// joined by OR, so no term is ever read as FTS5's syntax.
func fts5AnyWord(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(quoted, " OR ")
}

// postgresAnyWord is the to_tsquery text matching a note that holds any
// of terms: each a lexeme in single quotes (a single quote inside one
// doubled), joined by |, so no term is ever read as tsquery's syntax.
func postgresAnyWord(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `'` + strings.ReplaceAll(t, `'`, `''`) + `'`
	}
	return strings.Join(quoted, " | ")
}
