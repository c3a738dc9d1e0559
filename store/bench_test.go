package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate"
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
	sessions := make([]string, 64)
	for i := range sessions {
		sessions[i] = uuid.Must(uuid.NewV7()).String()
		insertSession(b, st, sessions[i])
	}
	i := 0
	for b.Loop() {
		i++
		sid, id := sessions[i%len(sessions)], uuid.Must(uuid.NewV7()).String()
		err := st.Write(ctx, func(tx *store.Tx) error {
			now := time.Now()
			row := store.NewCallRow(id, sid, "echo", []byte(`{"text":"ping"}`), toolgate.StatusPending, time.Minute, now)
			if err := tx.InsertCall(&row); err != nil {
				return err
			}
			_, err := tx.AppendEvent(sid, toolgate.EventToolCallRequest, id,
				[]byte(`{"type":"tool_call_request","id":"`+id+`","name":"echo","args":{"text":"ping"},"deadline":"2026-01-01T00:00:00.000Z","attempt":1}`), now)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
