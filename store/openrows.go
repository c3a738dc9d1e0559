package store

// openRows holds, for each open call this process stored, the call's row
// as committed: what FinishAnswered needs to compose the ended record
// without reading it back (an UPDATE … RETURNING costs the writer a
// temporary table per answer). Every write primitive that changes an open
// call keeps it true, inside the transaction first (rowChange) and here
// once that commits. Only the writer goroutine uses it. A call stored
// before this process started is not in it, and is read back instead.
type openRows map[string]*CallRow

// rowChange is an open call's row as a transaction left it; nil when the
// call ended.
type rowChange struct {
	id  string
	row *CallRow
}

// apply records a committed transaction's changes.
func (o openRows) apply(changes []rowChange) {
	for _, c := range changes {
		if c.row == nil {
			delete(o, c.id)
		} else {
			o[c.id] = c.row
		}
	}
}

// openRow returns an open call's row as this transaction sees it; nil when
// this process did not store the call or it has ended.
func (tx *Tx) openRow(id string) *CallRow {
	for i := len(tx.changes.rows) - 1; i >= 0; i-- {
		if c := tx.changes.rows[i]; c.id == id {
			return c.row
		}
	}
	return tx.rows[id]
}

// changeRow records a change of an open call's row, when the row is known.
func (tx *Tx) changeRow(id string, change func(r *CallRow)) {
	if cur := tx.openRow(id); cur != nil {
		r := *cur
		change(&r)
		tx.changes.rows = append(tx.changes.rows, rowChange{id, &r})
	}
}

// dropRow records that a call ended.
func (tx *Tx) dropRow(id string) {
	if tx.openRow(id) != nil {
		tx.changes.rows = append(tx.changes.rows, rowChange{id: id})
	}
}
