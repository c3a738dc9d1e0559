package store

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Changes between nodes, on PostgreSQL. A committed operation's Changes go
// to the publisher, which batches what is waiting (each change once) into
// NOTIFYs on the channel "toolgate"; each payload is the sending node's id
// and the changes as kind:id words ("<node> s:<id> e:<id> c:<id>"), kept
// under PostgreSQL's 8,000-byte limit. A listener on a connection of its
// own hears the other nodes' payloads and tells the function set with
// OnChanges. A notification is lost while the listener reconnects, and a
// node that dies between its commit and its NOTIFY never sends one; the
// tables are the truth, so after every (re)connect, and every ResyncEvery,
// the function is told ChangeResync: read again what matters.

// notifyChannel is the channel every node listens on.
const notifyChannel = "toolgate"

// maxPayload keeps a payload under PostgreSQL's limit (8,000 bytes).
const maxPayload = 7900

// Reconnecting the listener: the first wait, doubled up to the last.
const (
	firstListenBackoff = 250 * time.Millisecond
	maxListenBackoff   = 5 * time.Second
)

// publish sends the committed changes as NOTIFYs until notes is closed.
func (p *postgres) publish() {
	defer close(p.published)
	for first := range p.notes {
		seen := map[Change]bool{}
		var batch []Change
		add := func(changes []Change) {
			for _, c := range changes {
				if !seen[c] {
					seen[c] = true
					batch = append(batch, c)
				}
			}
		}
		add(first)
	drain:
		for len(batch) < 4096 {
			select {
			case more, ok := <-p.notes:
				if !ok {
					break drain
				}
				add(more)
			default:
				break drain
			}
		}
		payloads := encodePayloads(p.node, batch)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.db.ExecContext(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, notifyChannel, payloads)
		cancel()
		if err != nil {
			// The other nodes catch up at their next resync.
			p.log.Warn("store: notify the other nodes", "changes", len(batch), "err", err)
		}
	}
}

// encodePayloads writes changes as payloads of node's, each under maxPayload.
func encodePayloads(node string, changes []Change) []string {
	var out []string
	var b strings.Builder
	for _, c := range changes {
		word := string(c.Kind) + ":" + c.ID
		if b.Len() > 0 && b.Len()+1+len(word) > maxPayload {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(node)
		}
		b.WriteByte(' ')
		b.WriteString(word)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// decodePayload reads a payload; nil when node sent it (its own changes)
// or it holds none.
func decodePayload(node, payload string) []Change {
	words := strings.Fields(payload)
	if len(words) < 2 || words[0] == node {
		return nil
	}
	changes := make([]Change, 0, len(words)-1)
	for _, w := range words[1:] {
		if len(w) < 2 || w[1] != ':' {
			continue
		}
		changes = append(changes, Change{Kind: ChangeKind(w[0]), ID: w[2:]})
	}
	return changes
}

// setOnChanges sets the function told of the other nodes' changes
// (Store.OnChanges), then starts, once and unless closed, the listener,
// the resync timer (ChangeResync every period) and the goroutine that
// tells the function.
func (p *postgres) setOnChanges(fn func([]Change), every time.Duration) {
	p.changesMu.Lock()
	p.onChanges = fn
	p.changesMu.Unlock()
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return
	}
	p.listening.Do(func() {
		p.loops.Add(3)
		go p.deliverChanges()
		go p.listen()
		go p.resyncEvery(every)
	})
}

// hear hands changes to the deliverer; false once the store closes.
func (p *postgres) hear(changes []Change) bool {
	select {
	case p.heard <- changes:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// deliverChanges tells OnChanges' function what was heard, in order, from
// this one goroutine.
func (p *postgres) deliverChanges() {
	defer p.loops.Done()
	for {
		select {
		case changes := <-p.heard:
			p.changesMu.Lock()
			fn := p.onChanges
			p.changesMu.Unlock()
			if fn != nil {
				fn(changes)
			}
		case <-p.ctx.Done():
			return
		}
	}
}

// resyncEvery tells ChangeResync every period.
func (p *postgres) resyncEvery(period time.Duration) {
	defer p.loops.Done()
	if period <= 0 {
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if !p.hear([]Change{{Kind: ChangeResync}}) {
				return
			}
		case <-p.ctx.Done():
			return
		}
	}
}

// listen keeps a connection listening on notifyChannel until the store
// closes, reconnecting with a growing wait when it drops; after each
// (re)connect it tells ChangeResync.
func (p *postgres) listen() {
	defer p.loops.Done()
	ctx := p.ctx
	backoff := firstListenBackoff
	wait := func() bool {
		select {
		case <-time.After(backoff):
			backoff = min(2*backoff, maxListenBackoff)
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, p.config.Copy())
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
				conn.Close(context.Background())
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("store: listen for the other nodes' changes", "err", err, "retry_in", backoff)
			}
			if !wait() {
				return
			}
			continue
		}
		backoff = firstListenBackoff
		if !p.hear([]Change{{Kind: ChangeResync}}) {
			conn.Close(context.Background())
			return
		}
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				if ctx.Err() == nil {
					p.log.Warn("store: the listening connection dropped", "err", err)
				}
				break
			}
			if changes := decodePayload(p.node, n.Payload); len(changes) > 0 && !p.hear(changes) {
				break
			}
		}
		conn.Close(context.Background())
		if ctx.Err() != nil || !wait() {
			return
		}
	}
}
