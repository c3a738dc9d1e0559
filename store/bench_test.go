package store_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/cputime"
	"github.com/toolgate/toolgate/store"
)

// BenchmarkCommitSetting is the cost of the smallest transaction through
// the writer, one at a time: one row of one table, one page written.
func BenchmarkCommitSetting(b *testing.B) {
	st, _ := openStore(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		key := "k" + strconv.Itoa(i%100)
		if err := st.Write(ctx, func(tx *store.Tx) error { return tx.PutSetting(key, "v") }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitCall is the first transaction of every call, one at a
// time: the call's row (with its indexes) and its tool_call_request event,
// for calls spread over 64 sessions. Next to BenchmarkCommitSetting it
// shows what the pages a call touches cost at commit.
func BenchmarkCommitCall(b *testing.B) {
	st, _ := openStore(b)
	ctx := context.Background()
	sessions := benchSessions(b, st)
	i := 0
	for b.Loop() {
		i++
		row, event := benchCall(sessions[i%len(sessions)])
		if err := st.Write(ctx, func(tx *store.Tx) error { return insertBenchCall(tx, &row, event) }); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSessions stores 64 sessions and returns their ids.
func benchSessions(tb testing.TB, st *store.Store) []string {
	sessions := make([]string, 64)
	for i := range sessions {
		sessions[i] = uuid.Must(uuid.NewV7()).String()
		insertSession(tb, st, sessions[i])
	}
	return sessions
}

// benchCall builds a new pending call of session sid and its encoded
// tool_call_request, as the gateway does before handing them to the writer.
func benchCall(sid string) (store.CallRow, []byte) {
	id := uuid.Must(uuid.NewV7()).String()
	row := store.NewCallRow(id, sid, "echo", []byte(`{"text":"ping"}`), toolgate.StatusPending, time.Minute, time.Now())
	event := []byte(`{"type":"tool_call_request","id":"` + id + `","name":"echo","args":{"text":"ping"},"deadline":"2026-01-01T00:00:00.000Z","attempt":1}`)
	return row, event
}

// insertBenchCall writes what storing a call writes: its row and its event.
func insertBenchCall(tx *store.Tx, row *store.CallRow, event []byte) error {
	if err := tx.InsertCall(row); err != nil {
		return err
	}
	_, err := tx.AppendEvent(row.SessionID.String, toolgate.EventToolCallRequest, row.ID, event, row.CreatedTime())
	return err
}

// BenchmarkWriterCalls is the store's ceiling for the gateway's rate: the
// two writes of every call (its row with its tool_call_request event, then
// its answer), from 64 goroutines at once, each its own session's caller,
// with nothing else in the process — no HTTP, no streams, no clients. The
// writer groups the operations as it does under load. The gateway cannot
// complete calls faster than this on the same machine.
func BenchmarkWriterCalls(b *testing.B) {
	st, _ := openStore(b)
	ctx := context.Background()
	sessions := benchSessions(b, st)
	output := []byte(`{"text":"ping"}`)
	next := make(chan struct{}, len(sessions))
	go func() {
		for range b.N {
			next <- struct{}{}
		}
		close(next)
	}()
	tx0 := st.Transactions()
	b.ResetTimer()
	cpu0 := cputime.Process()
	start := time.Now()
	var wg sync.WaitGroup
	for _, sid := range sessions {
		wg.Go(func() {
			for range next {
				row, event := benchCall(sid)
				id, now := row.ID, row.CreatedTime()
				err := st.Write(ctx, func(tx *store.Tx) error { return insertBenchCall(tx, &row, event) })
				if err == nil {
					answered := time.Now()
					err = st.Write(ctx, func(tx *store.Tx) error {
						ended, err := tx.FinishAnswered(id, sid, store.Outcome{Status: toolgate.StatusCompleted, Output: output}, answered, now, 1)
						if err == nil && ended == nil {
							err = fmt.Errorf("call %s not answered", id)
						}
						return err
					})
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
	b.ReportMetric(float64(st.Transactions()-tx0)/float64(b.N), "db-tx/call")
}
