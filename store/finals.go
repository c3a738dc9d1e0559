package store

import (
	"database/sql"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
)

// finalsSize is how many recently ended calls are kept in memory.
const finalsSize = 8192

// recentFinals keeps the records of calls that have just ended, as
// committed, so that the callers woken by the end read them without a
// query. A final record never changes again, so the copy cannot go stale;
// it is filled only after the transaction that ended the call commits.
type recentFinals struct {
	mu    sync.Mutex
	byID  map[string]CallRow
	order []string // ring of ids, oldest at next
	next  int
}

func newRecentFinals() *recentFinals {
	return &recentFinals{byID: make(map[string]CallRow, finalsSize), order: make([]string, finalsSize)}
}

func (f *recentFinals) put(rows []CallRow) {
	if len(rows) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range rows {
		if old := f.order[f.next]; old != "" {
			delete(f.byID, old)
		}
		f.order[f.next] = r.ID
		f.next = (f.next + 1) % finalsSize
		f.byID[r.ID] = r
	}
}

func (f *recentFinals) get(id string) (CallRow, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.byID[id]
	return r, ok
}

// Finished returns the record a call will have once FinishCall with o
// commits: the row as read in the transaction, with the outcome applied
// the way FinishCall stores it.
func (r CallRow) Finished(o Outcome, now time.Time) CallRow {
	r.Status = string(o.Status)
	r.Output = nullText(o.Output)
	r.ErrorCode, r.ErrorMessage = sql.NullString{}, sql.NullString{}
	if o.ErrorCode != "" {
		r.ErrorCode = sql.NullString{String: o.ErrorCode, Valid: true}
		r.ErrorMessage = sql.NullString{String: o.ErrorMessage, Valid: true}
	}
	r.ErrorDetails = nullText(o.ErrorDetails)
	r.CompletedAt.Int64, r.CompletedAt.Valid = ms(now), true
	return r
}

// RememberFinal keeps the ended call's record in memory once this
// transaction commits; row must be what the stored record now is (see
// CallRow.Finished).
func (tx *Tx) RememberFinal(row CallRow) {
	if toolgate.CallStatus(row.Status).Final() {
		tx.changes.finals = append(tx.changes.finals, row)
	}
}

// nullText is a nullable text column: NULL for nil.
func nullText(b []byte) sql.NullString {
	if b == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(b), Valid: true}
}
