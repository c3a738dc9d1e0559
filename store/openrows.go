package store

// openRows holds, for each open call of a session this process stored, its row
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

// rowChanges are a transaction's changes of open rows, in order, with the
// place of each call's latest (one operation may change thousands of rows,
// as a flush of delivery marks does, so they are not searched one by one).
type rowChanges struct {
	list   []rowChange
	latest map[string]int
}

func (c *rowChanges) add(change rowChange) {
	if c.latest == nil {
		c.latest = map[string]int{}
	}
	c.latest[change.id] = len(c.list)
	c.list = append(c.list, change)
}

// get returns a call's latest change; ok is false when there is none.
func (c *rowChanges) get(id string) (row *CallRow, ok bool) {
	i, ok := c.latest[id]
	if !ok {
		return nil, false
	}
	return c.list[i].row, true
}

// truncate keeps the first n changes (a savepoint rolled back the rest).
func (c *rowChanges) truncate(n int) {
	if n == len(c.list) {
		return
	}
	c.list = c.list[:n]
	clear(c.latest)
	for i, change := range c.list {
		c.latest[change.id] = i
	}
}

// openRow returns an open call's row as this transaction sees it; nil when
// this process did not store the call or it has ended, and always on
// PostgreSQL, where other nodes change the rows.
func (tx *Tx) openRow(id string) *CallRow {
	if tx.pg != nil {
		return nil
	}
	if row, ok := tx.changes.rows.get(id); ok {
		return row
	}
	return tx.rows[id]
}

// changeRow records a change of an open call's row, when the row is known.
func (tx *Tx) changeRow(id string, change func(r *CallRow)) {
	if cur := tx.openRow(id); cur != nil {
		r := *cur
		change(&r)
		tx.changes.rows.add(rowChange{id, &r})
	}
}

// dropRow records that a call ended.
func (tx *Tx) dropRow(id string) {
	if tx.openRow(id) != nil {
		tx.changes.rows.add(rowChange{id: id})
	}
}
