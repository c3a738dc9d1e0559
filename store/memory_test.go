package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// writeNote stores a note or fails the test, reporting whether it is new.
func writeNote(t *testing.T, st *store.Store, scope, key, text string) bool {
	t.Helper()
	created, err := st.WriteMemory(context.Background(), store.MemoryWrite{Scope: scope, Key: key, Text: text, Now: time.Now()})
	if err != nil {
		t.Fatalf("write %s/%s: %v", scope, key, err)
	}
	return created
}

// searchKeys returns the keys SearchMemory finds, in its order.
func searchKeys(t *testing.T, st *store.Store, scope, query string, limit int) []string {
	t.Helper()
	rows, err := st.SearchMemory(context.Background(), scope, query, limit)
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	keys := []string{}
	for _, r := range rows {
		if r.Scope != scope {
			t.Fatalf("search in scope %q found a note of scope %q", scope, r.Scope)
		}
		keys = append(keys, r.Key)
	}
	return keys
}

// wantCode fails the test unless err is a *toolgate.Error with code and
// a message holding each of parts.
func wantCode(t *testing.T, what string, err error, code string, parts ...string) {
	t.Helper()
	var te *toolgate.Error
	if !errors.As(err, &te) || te.Code != code {
		t.Fatalf("%s: err = %v, want %s", what, err, code)
	}
	for _, p := range parts {
		if !strings.Contains(te.Message, p) {
			t.Fatalf("%s: message %q does not say %q", what, te.Message, p)
		}
	}
}

// TestMemoryWriteRead: a write of a new key creates the note, a second
// write of the key replaces its text and keeps its creation time; a read
// finds it in its own scope only; the full-text index follows the
// replacement (the old words no longer find the note).
func TestMemoryWriteRead(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		ctx := context.Background()
		first := time.UnixMilli(1_700_000_000_000)
		created, err := st.WriteMemory(ctx, store.MemoryWrite{Key: "user/timezone", Text: "The user lives in Lisbon", Now: first})
		if err != nil || !created {
			t.Fatalf("first write: created=%v err=%v", created, err)
		}
		later := first.Add(time.Hour)
		created, err = st.WriteMemory(ctx, store.MemoryWrite{Key: "user/timezone", Text: "The user moved to Tokyo", Now: later})
		if err != nil || created {
			t.Fatalf("second write: created=%v err=%v, want a replacement", created, err)
		}
		note, err := st.ReadMemory(ctx, "", "user/timezone")
		if err != nil || note == nil {
			t.Fatalf("read: %+v %v", note, err)
		}
		if note.Text != "The user moved to Tokyo" || !note.Created().Equal(first) || !note.Updated().Equal(later) {
			t.Fatalf("note = %+v", note)
		}
		if n, err := st.CountMemories(ctx, ""); err != nil || n != 1 {
			t.Fatalf("count = %d %v, want 1", n, err)
		}

		// Another scope neither sees it nor collides with it.
		if other, err := st.ReadMemory(ctx, "session-b", "user/timezone"); err != nil || other != nil {
			t.Fatalf("read in another scope = %+v %v", other, err)
		}
		if !writeNote(t, st, "session-b", "user/timezone", "Paris") {
			t.Fatal("the same key in another scope is not a new note")
		}
		if note, _ := st.ReadMemory(ctx, "", "user/timezone"); note.Text != "The user moved to Tokyo" {
			t.Fatalf("the agent's note changed by another scope's write: %+v", note)
		}
		if missing, err := st.ReadMemory(ctx, "", "no such key"); err != nil || missing != nil {
			t.Fatalf("missing key = %+v %v", missing, err)
		}

		if keys := searchKeys(t, st, "", "tokyo", 5); !slices.Equal(keys, []string{"user/timezone"}) {
			t.Fatalf("search tokyo = %v", keys)
		}
		if keys := searchKeys(t, st, "", "Lisbon", 5); len(keys) != 0 {
			t.Fatalf("search for the replaced text still finds %v", keys)
		}
		if keys := searchKeys(t, st, "", "timezone", 5); !slices.Equal(keys, []string{"user/timezone"}) {
			t.Fatalf("a word of the key does not find the note: %v", keys)
		}
		if keys := searchKeys(t, st, "session-b", "tokyo paris", 5); !slices.Equal(keys, []string{"user/timezone"}) {
			t.Fatalf("search in session-b = %v", keys)
		}
	})
}

// TestMemorySearchRanking: the notes holding more of the query's words
// come first; the key's words weigh more than the text's; limit cuts the
// list; case does not matter. On SQLite (bm25) a rarer word also weighs
// more than a common one.
func TestMemorySearchRanking(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		// Filler, so that the words below are rare in the table (bm25
		// gives a word in more than half the notes next to no weight).
		for i := range 12 {
			writeNote(t, st, "", fmt.Sprintf("filler-%02d", i), fmt.Sprintf("meeting notes number %d about the weekly status", i))
		}
		writeNote(t, st, "", "one-word", "The printer on floor two jams often.")
		writeNote(t, st, "", "two-words", "The printer on floor two needs blue toner.")
		writeNote(t, st, "", "three-words", "Printer toner is blue; order cyan cartridges for the printer.")
		writeNote(t, st, "", "unrelated", "Lunch is served at noon.")

		keys := searchKeys(t, st, "", "PRINTER toner cartridges", 10)
		if !slices.Equal(keys, []string{"three-words", "two-words", "one-word"}) {
			t.Fatalf("ranking = %v, want three-words, two-words, one-word", keys)
		}
		if keys := searchKeys(t, st, "", "printer toner cartridges", 2); !slices.Equal(keys, []string{"three-words", "two-words"}) {
			t.Fatalf("limit 2 = %v", keys)
		}

		// A word in a note's key outranks the same word in a text.
		writeNote(t, st, "", "wifi password", "ask the office manager")
		writeNote(t, st, "", "router", "the wifi is slow on Mondays, the password changes monthly")
		if keys := searchKeys(t, st, "", "wifi", 5); len(keys) != 2 || keys[0] != "wifi password" {
			t.Fatalf("key match ranking = %v, want wifi password first", keys)
		}

		if onPostgres(t) {
			return // ts_rank does not weigh how rare a word is
		}
		// Rarity: "weekly" is in every filler note, "noon" in one note.
		if keys := searchKeys(t, st, "", "weekly noon", 20); len(keys) != 13 || keys[0] != "unrelated" {
			t.Fatalf("rare word ranking = %v, want unrelated first of 13", keys)
		}
	})
}

// TestMemorySearchHostileQueries: a query is words, never the full-text
// syntax of either database: quotes, operators, column filters, prefixes
// and parentheses are separators, and each such query finds the note
// holding its words without an error. A query with no word, too long, or
// with too many words, and a limit out of bounds, are INVALID_ARGS.
func TestMemorySearchHostileQueries(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		writeNote(t, st, "", "deploy", `Deploy with "make release" AND then NEAR the end run tests: key:value`)
		writeNote(t, st, "", "other", "nothing relevant here")
		for _, q := range []string{
			`"release`, `release"`, `"make" "release"`, `release*`, `*release`, `NEAR(release tests)`, `NEAR(release`,
			`release AND`, `AND release`, `OR release NOT`, `-release`, `release -elsewhere`, `text:release`, `key:deploy`,
			`{key text}: release`, `^release`, `release + tests`, `release'`, `'release' | 'x'`, `release & !x`,
			`release <-> x`, `release:*`, `release:AB`, `(release))`, `\release\`, "release\ttests\n", `release; DROP TABLE memories; --`,
			`déploy release`, `release ` + strings.Repeat("z", 400),
		} {
			keys := searchKeys(t, st, "", q, 5)
			if len(keys) == 0 || keys[0] != "deploy" {
				t.Errorf("query %q found %v, want deploy first", q, keys)
			}
		}
		// Operators alone are words of their own, found where written.
		if keys := searchKeys(t, st, "", "NEAR", 5); !slices.Equal(keys, []string{"deploy"}) {
			t.Errorf("the word NEAR found %v", keys)
		}
		if keys := searchKeys(t, st, "", "AND OR NOT", 5); !slices.Equal(keys, []string{"deploy"}) {
			t.Errorf("the words AND OR NOT found %v", keys)
		}

		ctx := context.Background()
		for _, c := range []struct {
			query string
			limit int
			says  string
		}{
			{"", 5, "no word"},
			{`"" * ( ) - : ^ + '`, 5, "no word"},
			{"   \t\n", 5, "no word"},
			{strings.Repeat("a", store.MaxMemoryQuery+1), 5, "at most 500"},
			{strings.Repeat("w ", 10) + wordsList(store.MaxMemoryTerms+1), 5, "at most 32"},
			{"release\x00", 5, "NUL"},
			{"release", 0, "limit"},
			{"release", store.MaxMemoryResults + 1, "limit"},
		} {
			_, err := st.SearchMemory(ctx, "", c.query, c.limit)
			wantCode(t, fmt.Sprintf("query %q limit %d", c.query, c.limit), err, toolgate.EInvalidArgs, c.says)
		}
		// 32 distinct words (repeats counted once) are taken.
		if _, err := st.SearchMemory(ctx, "", wordsList(store.MaxMemoryTerms)+" word1 WORD1", 5); err != nil {
			t.Fatalf("32 distinct words: %v", err)
		}
	})
}

// wordsList returns n distinct words separated by spaces.
func wordsList(n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("word%d", i)
	}
	return strings.Join(words, " ")
}

// TestMemoryBounds: a key or text out of bounds, or holding a NUL, is
// INVALID_ARGS and stores nothing (PostgreSQL would refuse the NUL
// itself); a new key past the scope's cap is CONFLICT, while replacing an
// existing note and writing in another scope still work.
func TestMemoryBounds(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		ctx := context.Background()
		now := time.Now()
		for _, c := range []struct {
			name, key, text, says string
		}{
			{"empty key", "", "x", "key is empty"},
			{"long key", strings.Repeat("k", store.MaxMemoryKey+1), "x", "at most 200"},
			{"NUL in key", "a\x00b", "x", "NUL"},
			{"invalid UTF-8 key", "a\xffb", "x", "UTF-8"},
			{"empty text", "k", "", "text is empty"},
			{"long text", "k", strings.Repeat("t", store.MaxMemoryText+1), "at most 16384"},
			{"NUL in text", "k", "before\x00after", "NUL"},
		} {
			_, err := st.WriteMemory(ctx, store.MemoryWrite{Key: c.key, Text: c.text, Now: now})
			wantCode(t, c.name, err, toolgate.EInvalidArgs, c.says)
		}
		if n, err := st.CountMemories(ctx, ""); err != nil || n != 0 {
			t.Fatalf("notes after refused writes = %d %v", n, err)
		}
		_, err := st.ReadMemory(ctx, "", "a\x00b")
		wantCode(t, "read with a NUL key", err, toolgate.EInvalidArgs, "NUL")

		// The longest key (in characters, not bytes) and text fit.
		longKey := strings.Repeat("é", store.MaxMemoryKey)
		writeNote(t, st, "", longKey, strings.Repeat("t", store.MaxMemoryText))
		if note, err := st.ReadMemory(ctx, "", longKey); err != nil || note == nil || len(note.Text) != store.MaxMemoryText {
			t.Fatalf("longest note read back: %v %v", note != nil, err)
		}

		// The cap on notes per scope.
		write := func(scope, key string) error {
			_, err := st.WriteMemory(ctx, store.MemoryWrite{Scope: scope, Key: key, Text: "note " + key, Now: now, MaxNotes: 3})
			return err
		}
		for _, key := range []string{"a", "b"} {
			if err := write("", key); err != nil {
				t.Fatal(err)
			}
		}
		wantCode(t, "a fourth note", write("", "c"), toolgate.EConflict, "3 notes")
		if err := write("", "a"); err != nil {
			t.Fatalf("replacing a note at the cap: %v", err)
		}
		if err := write("session-x", "c"); err != nil {
			t.Fatalf("a note in another scope: %v", err)
		}
		if note, _ := st.ReadMemory(ctx, "", "c"); note != nil {
			t.Fatalf("the refused note was stored: %+v", note)
		}
		if n, _ := st.CountMemories(ctx, ""); n != 3 {
			t.Fatalf("notes = %d, want 3", n)
		}
	})
}

// TestMemoryCapUnderConcurrentWrites: many writers adding new keys to one
// scope at once never push it past its cap (the count and the insert are
// one transaction; on PostgreSQL a lock per scope orders the nodes).
func TestMemoryCapUnderConcurrentWrites(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, url := openStore(t)
		stores := []*store.Store{st}
		if onPostgres(t) {
			second, err := store.Open(url, nil) // another node
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { second.Close() })
			stores = append(stores, second)
		}
		const limit, writers = 5, 20
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Go(func() {
				_, errs[i] = stores[i%len(stores)].WriteMemory(context.Background(), store.MemoryWrite{
					Key: fmt.Sprintf("k%d", i), Text: "x", Now: time.Now(), MaxNotes: limit})
			})
		}
		wg.Wait()
		stored := 0
		for i, err := range errs {
			if err == nil {
				stored++
			} else if toolgate.ErrorCode(err) != toolgate.EConflict {
				t.Fatalf("writer %d: %v", i, err)
			}
		}
		if n, _ := st.CountMemories(context.Background(), ""); n != limit || stored != limit {
			t.Fatalf("notes = %d, writes that succeeded = %d, want %d", n, stored, limit)
		}
	})
}
