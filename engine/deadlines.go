package engine

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// deadlineQueue holds the deadlines of open calls in one min-heap served by
// one goroutine and one timer, instead of a timer per call. An entry may be
// stale (the call ended, or progress moved its deadline): expiry re-checks
// the stored call, so stale entries cost a lookup and nothing else.
type deadlineQueue struct {
	now    func() time.Time
	expire func(ids []string)

	mu   sync.Mutex
	h    deadlineHeap
	kick chan struct{}
}

type deadlineEntry struct {
	at time.Time
	id string
}

type deadlineHeap []deadlineEntry

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadlineEntry)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newDeadlineQueue(now func() time.Time, expire func(ids []string)) *deadlineQueue {
	return &deadlineQueue{now: now, expire: expire, kick: make(chan struct{}, 1)}
}

// schedule adds a deadline; the loop wakes if it is the new earliest.
func (q *deadlineQueue) schedule(id string, at time.Time) {
	q.mu.Lock()
	heap.Push(&q.h, deadlineEntry{at: at, id: id})
	first := q.h[0].id == id && q.h[0].at.Equal(at)
	q.mu.Unlock()
	if first {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

// due pops every entry whose time has come and returns how long until the
// next one (or a long time when none).
func (q *deadlineQueue) due() ([]string, time.Duration) {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	var ids []string
	for len(q.h) > 0 && !q.h[0].at.After(now) {
		ids = append(ids, heap.Pop(&q.h).(deadlineEntry).id)
	}
	if len(q.h) == 0 {
		return ids, time.Hour
	}
	return ids, q.h[0].at.Sub(now)
}

// tick is one step of the queue: it expires the calls whose deadlines have
// come and returns how many entries it took and how long until the next
// one. The loop (run) calls it; tests may call it to drive the queue
// without waiting.
func (q *deadlineQueue) tick() (taken int, wait time.Duration) {
	ids, wait := q.due()
	if len(ids) > 0 {
		q.expire(ids)
	}
	return len(ids), wait
}

// run expires calls as their deadlines pass, until stop closes.
func (q *deadlineQueue) run(stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		taken, wait := q.tick()
		if taken > 0 {
			continue
		}
		timer.Reset(wait)
		select {
		case <-stop:
			return
		case <-q.kick:
		case <-timer.C:
		}
	}
}

// expireOpenCalls is the deadline queue's expiry: it leaves out the calls
// known to have ended already (most entries, since most calls are answered
// in time) so that they cost no read on the single writer. The sweep's
// overdue query is the safety net for anything this could miss.
func (e *Calls) expireOpenCalls(ids []string) {
	e.expireCalls(e.waiters.stillOpen(ids))
}

// expireCalls ends as timed_out every listed call that is still open and
// whose stored deadline has passed, and tells each client with a
// call_cancelled event (reason timeout). Callers waiting get the record
// with status timed_out and error code TIMEOUT. The deadline is checked
// by the ending statement itself (store's ExpireCall), not only by the
// read before it: a progress report or an approval committed in between
// (on PostgreSQL, by another node) moves the deadline out and wins.
func (e *Calls) expireCalls(ids []string) {
	if len(ids) == 0 {
		return
	}
	now := e.now()
	ended, err := store.WriteValue(context.Background(), e.st, func(tx *store.Tx) ([]endedCall, error) {
		var ended []endedCall
		for _, id := range ids {
			row, err := tx.GetCall(id)
			if err != nil {
				return nil, err
			}
			if row == nil || toolgate.CallStatus(row.Status).Final() || row.DeadlineTime().After(now) {
				continue
			}
			c, ok, err := expireCall(tx, row, now)
			if err != nil {
				return nil, err
			}
			if ok {
				ended = append(ended, c)
			}
		}
		return ended, nil
	})
	if err != nil {
		e.log.Error("expire calls", "err", err, "calls", len(ids))
		// Try again shortly rather than leave the calls open for ever.
		retry := now.Add(time.Second)
		for _, id := range ids {
			e.deadlines.schedule(id, retry)
		}
		return
	}
	e.afterCallsEnded(ended...)
}

// expireCall ends one call read as open and overdue as timed_out inside
// tx, as endCall does, but only while the row is still what was read: in
// the same phase (awaiting approval, or sent/pending) and past its
// deadline. ok is false, and nothing is written, when it no longer is.
func expireCall(tx *store.Tx, row *store.CallRow, now time.Time) (ended endedCall, ok bool, err error) {
	awaiting := row.Status == string(toolgate.StatusAwaitingApproval)
	message := "no answer before the call's deadline"
	if awaiting {
		message = "no approval before the call's deadline"
	}
	o := store.Outcome{Status: toolgate.StatusTimedOut, ErrorCode: toolgate.ETimeout, ErrorMessage: message}
	if ok, err = tx.ExpireCall(row.ID, awaiting, o, now); err != nil || !ok {
		return endedCall{}, false, err
	}
	ended = endedCall{id: row.ID, status: o.Status, created: row.CreatedTime()}
	if row.SessionID.Valid && !awaiting {
		// Sent, or about to be: its client is told to stop.
		if _, err := tx.AppendEvent(row.SessionID.String, toolgate.EventCallCancelled, row.ID,
			cancelledEvent(row.ID, toolgate.CancelTimeout), now); err != nil {
			return endedCall{}, false, err
		}
		ended.toldSession = row.SessionID.String
	}
	return ended, true, nil
}
