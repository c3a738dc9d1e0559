package chaos_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite"

	"github.com/toolgate/toolgate"
)

// figures are what the chaos test reports (and RELIABILITY.md records).
type figures struct {
	Kills          int
	Created        int // calls in the database, one per Idempotency-Key used
	Answered       int // completed with the output of one of their executions
	Lost           int // created but not completed, or missing
	Doubled        int // an answer applied over another, or from a foreign execution
	Executions     int
	RepeatedExecs  int // calls whose tool ran more than once
	SentAgain      int // calls written to a client more than once (attempts > 1)
	Redelivered    int64
	RePosts        int // POST /v1/calls sent again with the same key
	Reattaches     int
	LongestAcross  time.Duration // the longest a caller waited for a call spanning a kill
	CallsAcrossAny int           // calls whose caller waited across at least one kill
}

func (f figures) String() string {
	return fmt.Sprintf(`| kills (SIGKILL) | %d |
| calls created | %d |
| calls answered | %d |
| lost | %d |
| doubled | %d |
| tool executions | %d |
| executions repeated after a crash | %d |
| calls written to a client more than once (at-least-once delivery) | %d |
| deliveries the SDK dropped as already taken | %d |
| creates retried with the same Idempotency-Key | %d |
| re-attaches (GET /v1/calls/{id}?wait_ms=) | %d |
| calls whose caller waited across a kill | %d |
| longest a caller waited across a kill | %s |`,
		f.Kills, f.Created, f.Answered, f.Lost, f.Doubled, f.Executions, f.RepeatedExecs,
		f.SentAgain, f.Redelivered, f.RePosts, f.Reattaches, f.CallsAcrossAny, f.LongestAcross.Round(time.Millisecond))
}

// storedCall is a call's row and its call_history line, read from the
// database file.
type storedCall struct {
	ID            string  `db:"id"`
	Key           *string `db:"idempotency_key"`
	Status        string  `db:"status"`
	Output        *string `db:"output"`
	Attempts      int     `db:"attempts"`
	HistoryStatus *string `db:"history_status"`
	HistoryOutput *string `db:"history_output"`
}

// readStoredCalls reads every call from the SQLite file, with its
// call_history view line.
func readStoredCalls(t *testing.T, dbPath string) []storedCall {
	t.Helper()
	db, err := sqlx.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows []storedCall
	err = db.Select(&rows, `SELECT c.id, c.idempotency_key, c.status, c.output, c.attempts,
		h.status AS history_status, h.output AS history_output
		FROM calls c LEFT JOIN call_history h ON h.call_id = c.id`)
	if err != nil {
		t.Fatalf("reading the calls from %s: %v", dbPath, err)
	}
	return rows
}

// readCall reads a call record with GET /v1/calls/{id}.
func readCall(t *testing.T, baseURL, agentKey, id string) toolgate.Call {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, baseURL+"/v1/calls/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+agentKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/calls/%s: %v", id, err)
	}
	defer resp.Body.Close()
	var call toolgate.Call
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/calls/%s: status %d", id, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&call); err != nil {
		t.Fatal(err)
	}
	return call
}
