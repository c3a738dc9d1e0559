package store

import (
	"sync"

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

// RememberFinal keeps the ended call's record in memory once this
// transaction commits; row must be what the stored record now is (as
// FinishAnswered returns it).
func (tx *Tx) RememberFinal(row CallRow) {
	if toolgate.CallStatus(row.Status).Final() {
		tx.changes.finals = append(tx.changes.finals, row)
	}
}
