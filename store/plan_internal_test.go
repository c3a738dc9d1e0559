package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// explain returns the rows of EXPLAIN (or EXPLAIN QUERY PLAN, with plan)
// for q on the writer's connection, its parameters bound to NULL, one line
// per row.
func explain(t *testing.T, s *Store, q string, plan bool) string {
	t.Helper()
	prefix := "EXPLAIN "
	if plan {
		prefix = "EXPLAIN QUERY PLAN "
	}
	var out strings.Builder
	// On the writer's connection, from the writer's goroutine: nothing else
	// may use it.
	err := s.Write(context.Background(), func(tx *Tx) error {
		out.Reset()
		rows, err := tx.conn.QueryxContext(context.Background(), prefix+q, make([]any, strings.Count(q, "?"))...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			cols, err := rows.SliceScan()
			if err != nil {
				return err
			}
			fmt.Fprintln(&out, cols...)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("%s%s: %v", prefix, q, err)
	}
	return out.String()
}

// TestHotStatementsBuildNoTempTables: the statements every call runs on the
// writer build no temporary B-tree when they execute. An "IN (a, b, c)" list
// of more than two values — in the statement, or in the WHERE clause of a
// partial index the statement has to maintain — is coded as one, built anew
// on every execution (migration 0005 took it out of calls_open).
func TestHotStatementsBuildNoTempTables(t *testing.T) {
	s := openTestStore(t)
	for _, q := range []string{qInsertCall, qAppendEvent, qFinishAnsweredKnown, qMarkDelivered, qFinishCall, qApproveCall, qSetProgress} {
		if program := explain(t, s, q, false); strings.Contains(program, "OpenEphemeral") {
			t.Errorf("%s\nbuilds a temporary B-tree on every execution:\n%s", q, program)
		}
	}
}

// TestOpenCallQueriesUseCallsOpen: the queries over open calls find them
// through the partial index calls_open, which SQLite uses only when the
// query states the index's own condition (openCall) word for word.
func TestOpenCallQueriesUseCallsOpen(t *testing.T) {
	s := openTestStore(t)
	for _, q := range []string{qOpenDeadlines, qOverdueCalls} {
		if plan := explain(t, s, q, true); !strings.Contains(plan, "USING INDEX calls_open") {
			t.Errorf("%s\ndoes not use calls_open:\n%s", q, plan)
		}
	}
}

// TestListPagesAreIndexRanges: a page of GET /v1/sessions or GET
// /api/tools reads a range of an index in the order it is listed — no
// scan of the table, no sort of every row before the first is returned —
// so its cost is the page's size, not the number of sessions or tools.
func TestListPagesAreIndexRanges(t *testing.T) {
	s := openTestStore(t)
	for q, index := range map[string]string{
		qOpenSessionsFirstPage: "SCAN sessions USING INDEX sessions_open",
		qOpenSessionsPage:      "USING INDEX sessions_open (id<?)",
		qToolsFirstPage:        "SCAN tools USING INDEX tools_newest_first",
		qToolsOfSessionAfter:   "(session_id=? AND name>?)", // of either index
		qToolsOfSessionsBefore: "USING INDEX tools_newest_first (session_id<?)",
	} {
		plan := explain(t, s, q, true)
		if !strings.Contains(plan, index) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s\nis not a range of its index (%s):\n%s", q, index, plan)
		}
	}
}
