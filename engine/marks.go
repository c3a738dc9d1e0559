package engine

import (
	"sync"
	"time"

	"github.com/toolgate/toolgate/store"
)

// markDelay is how long "delivered" marks wait before they are written.
// A client usually answers well within it, and then its answer's own write
// records the delivery: one write per call fewer on the single writer. It
// must outlast a call's round trip under load, with room to spare: a
// shorter one had the marks written by writes of their own exactly when
// the gateway was busiest (the figures are in BENCHMARKS.md, "Figures
// behind design choices in the code"). It is also how long the status may
// still read "pending" after the event went out; the delivery time
// recorded is when it went out.
const markDelay = 100 * time.Millisecond

// deliveryMarks holds the deliveries of calls written to their clients and
// not yet recorded in the store. It keeps these invariants:
//
//   - A delivery stays in pending until one write records it: the answer
//     that takes it (take; restore puts it back when that answer's write
//     did not record it) or the flush that hands pending to the store.
//   - Whenever pending has changed since the last flush, a flush is armed
//     (armed), so no mark waits longer than markDelay and one write.
type deliveryMarks struct {
	st *store.Store

	mu      sync.Mutex
	pending map[string]deliveryMark // by call id
	armed   bool
}

// deliveryMark is how often a call was written to its client, and when first.
type deliveryMark struct {
	first time.Time
	count int
}

func newDeliveryMarks(st *store.Store) *deliveryMarks { return &deliveryMarks{st: st} }

// note records deliveries and arms the flush.
func (m *deliveryMarks) note(ids []string, now time.Time) {
	m.change(func(pending map[string]deliveryMark) {
		for _, id := range ids {
			d := pending[id]
			if d.count == 0 {
				d.first = now
			}
			d.count++
			pending[id] = d
		}
	})
}

// take removes and returns a call's unrecorded deliveries, for the answer
// that records them.
func (m *deliveryMarks) take(id string) deliveryMark {
	m.mu.Lock()
	d := m.pending[id]
	delete(m.pending, id)
	m.mu.Unlock()
	return d
}

// restore puts back deliveries an answer did not record.
func (m *deliveryMarks) restore(id string, d deliveryMark) {
	if d.count == 0 {
		return
	}
	m.change(func(pending map[string]deliveryMark) {
		if cur, ok := pending[id]; ok {
			d.count += cur.count
		}
		pending[id] = d
	})
}

// change changes the unrecorded deliveries (a flush may have taken the map
// away: it starts a new one) and arms the flush.
func (m *deliveryMarks) change(fn func(pending map[string]deliveryMark)) {
	m.mu.Lock()
	if m.pending == nil {
		m.pending = map[string]deliveryMark{}
	}
	fn(m.pending)
	arm := !m.armed
	m.armed = true
	m.mu.Unlock()
	if arm {
		time.AfterFunc(markDelay, m.flush)
	}
}

// flush writes the deliveries no answer has recorded. The write is batched
// with others and nobody waits on it; the worst a crash can do is leave a
// call marked pending that was sent, and it is sent again.
func (m *deliveryMarks) flush() {
	m.mu.Lock()
	batch := m.pending
	m.pending = nil
	m.armed = false
	m.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	m.st.WriteAsync(func(tx *store.Tx) error {
		for id, d := range batch {
			if err := tx.MarkDeliveredTimes(id, d.first, d.count); err != nil {
				return err
			}
		}
		return nil
	})
}
