package handlers

import (
	"container/heap"
	"math/rand/v2"
	"time"
)

// pingSchedule orders the hub's streams by when each one's next ping is
// due: every stream pings on its own interval (a client may ask its own
// heartbeat_ms), and the first ping of each is placed at a random point of
// the last quarter of its interval, so that streams opened together (all
// clients reconnecting after a restart) do not ping together. A ping
// schedule that fired every stream at once queued 10,000 pings ahead of a
// call's event (DESIGN.md, "Stalls at scale"). The hub's lock guards it.
// A stream that ended stays in it until its turn comes, and is dropped
// then.
type pingSchedule []pingEntry

type pingEntry struct {
	due    time.Time
	stream *hubStream
}

func (q pingSchedule) Len() int           { return len(q) }
func (q pingSchedule) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q pingSchedule) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }

// Push implements heap.Interface.
func (q *pingSchedule) Push(x any) { *q = append(*q, x.(pingEntry)) }

// Pop implements heap.Interface.
func (q *pingSchedule) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = pingEntry{}
	*q = old[:len(old)-1]
	return e
}

// add schedules the first ping of stream s, opened at now, and reports
// whether it is now the first due.
func (q *pingSchedule) add(s *hubStream, now time.Time) bool {
	every := s.heartbeat
	first := every - time.Duration(rand.Int64N(int64(every/4)+1))
	heap.Push(q, pingEntry{due: now.Add(first), stream: s})
	return (*q)[0].stream == s
}

// next returns when the first ping is due, and false when none is.
func (q pingSchedule) next() (time.Time, bool) {
	if len(q) == 0 {
		return time.Time{}, false
	}
	return q[0].due, true
}

// popDue returns the streams whose ping is due at now (and which are still
// open: live says so), scheduling each one's next ping one interval later.
func (q *pingSchedule) popDue(now time.Time, live func(*hubStream) bool) []*hubStream {
	var due []*hubStream
	for len(*q) > 0 && !(*q)[0].due.After(now) {
		e := &(*q)[0]
		if !live(e.stream) {
			heap.Pop(q)
			continue
		}
		due = append(due, e.stream)
		e.due = e.due.Add(e.stream.heartbeat)
		if !e.due.After(now) { // fell behind (a stalled process): from now on
			e.due = now.Add(e.stream.heartbeat)
		}
		heap.Fix(q, 0)
	}
	return due
}
