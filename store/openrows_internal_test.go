package store

import "testing"

// TestRowChangesTruncate: after a savepoint rolls an operation back, a
// call's latest change is the one an earlier operation made, or the
// committed row when there is none.
func TestRowChangesTruncate(t *testing.T) {
	committed := openRows{"x": {ID: "x", Attempts: 0}, "y": {ID: "y", Attempts: 0}}
	tx := &Tx{rows: committed}
	tx.changeRow("x", func(r *CallRow) { r.Attempts = 1 }) // operation 1
	mark := tx.changes.len()
	tx.changeRow("x", func(r *CallRow) { r.Attempts = 2 }) // operation 2, rolled back
	tx.dropRow("y")
	if got := tx.openRow("x"); got.Attempts != 2 || tx.openRow("y") != nil {
		t.Fatalf("before the rollback: x %+v, y %+v", got, tx.openRow("y"))
	}
	tx.changes.truncate(mark)
	if got := tx.openRow("x"); got == nil || got.Attempts != 1 {
		t.Fatalf("x after the rollback = %+v, want operation 1's change", got)
	}
	if got := tx.openRow("y"); got == nil || got != committed["y"] {
		t.Fatalf("y after the rollback = %+v, want the committed row", got)
	}
	committed.apply(tx.changes.rows.list)
	if committed["x"].Attempts != 1 || committed["y"] == nil {
		t.Fatalf("committed after apply: %+v", committed)
	}
}
