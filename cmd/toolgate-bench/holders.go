package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"
)

// recoveryHolder keeps one raw stream per session open across a gateway
// kill: it counts the distinct calls received on first connections, and
// then on reconnected ones.
type recoveryHolder struct {
	base  string
	calls int
	retry time.Duration

	mu        sync.Mutex
	first     map[string]bool
	again     map[string]bool
	firstDone bool
	againDone bool
}

// runRecovery is the "recovery" subcommand. It creates sessions with the
// echo tool, opens their streams and prints `READY {"sessions":[...]}`;
// then "FIRST <n>" once it has received --calls distinct calls; when the
// streams end (the gateway was killed) each reconnects every --retry with
// Last-Event-ID, as an EventSource does, and it prints "DELIVERED
// <unix ns>" once every one of those calls has arrived again.
func runRecovery(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("toolgate-bench recovery", flag.ContinueOnError)
	url := fs.String("url", "", "gateway base URL")
	n := fs.Int("sessions", 1, "sessions")
	calls := fs.Int("calls", 1, "open calls the harness creates")
	retry := fs.Duration("retry", 50*time.Millisecond, "reconnection interval after a stream ends")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *calls < 1 || *url == "" {
		return errors.New("--url, --sessions >= 1 and --calls >= 1 are required")
	}
	sessions, err := createSessions(ctx, newAPIClient(32), *url, *n)
	if err != nil {
		return err
	}
	h := &recoveryHolder{base: *url, calls: *calls, retry: *retry, first: map[string]bool{}, again: map[string]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan error, len(sessions))
	for _, s := range sessions {
		go h.hold(ctx, s, ready)
	}
	for range sessions {
		if err := <-ready; err != nil {
			return err
		}
	}
	ids := make([]string, len(sessions))
	for i, s := range sessions {
		ids[i] = s.ID
	}
	b, _ := json.Marshal(map[string]any{"sessions": ids})
	fmt.Printf("READY %s\n", b)
	waitStdinClosed(ctx)
	return nil
}

// hold keeps s's stream open, reconnecting after it ends, until ctx ends.
// It reports on ready whether the first connection came up.
func (h *recoveryHolder) hold(ctx context.Context, s rawSession, ready chan<- error) {
	var lastID int64
	for conn := 0; ctx.Err() == nil; conn++ {
		st, err := openStream(ctx, h.base, nil, s, lastID)
		if err == nil {
			err = st.waitReady(30 * time.Second)
			if err != nil {
				st.close()
			}
		}
		if conn == 0 {
			ready <- err
			if err != nil {
				return
			}
		}
		if err != nil {
			time.Sleep(h.retry)
			continue
		}
		go func() { <-ctx.Done(); st.close() }()
		for {
			ev, err := st.next()
			if err != nil {
				break
			}
			if ev.ID > 0 {
				lastID = ev.ID
			}
			if id := callID(ev); id != "" {
				h.received(id, conn > 0)
			}
		}
		st.close()
		time.Sleep(h.retry)
	}
}

// received counts one delivered call and prints the milestones.
func (h *recoveryHolder) received(id string, reconnected bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !reconnected {
		h.first[id] = true
		if !h.firstDone && len(h.first) >= h.calls {
			h.firstDone = true
			fmt.Printf("FIRST %d\n", len(h.first))
		}
		return
	}
	h.again[id] = true
	if !h.againDone && len(h.again) >= h.calls {
		h.againDone = true
		fmt.Printf("DELIVERED %d\n", time.Now().UnixNano())
	}
}
