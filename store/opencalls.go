package store

// CountOpenCalls counts a session's open calls, for a bound that holds
// across nodes. On PostgreSQL it first takes a transaction-scoped
// advisory lock on the session's count, so that two nodes' counts and
// inserts for one session take turns (the lock is held until commit); the
// partial index calls_open_by_session makes the count a range of open
// calls only. On SQLite the one writer already takes turns.
func (tx *Tx) CountOpenCalls(sessionID string) (int, error) {
	if tx.pg != nil {
		if _, err := tx.exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 1))`, "open/"+sessionID); err != nil {
			return 0, err
		}
	}
	var n int
	err := tx.get(&n, `SELECT COUNT(*) FROM calls WHERE session_id = ? AND `+openCall, sessionID)
	return n, err
}
