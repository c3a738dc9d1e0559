package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// room is a set of four slots with the tools loop, which runs until its
// context ends, and echo.
type room struct {
	set        *testSet
	loop, echo toolgate.Tool
	spinning   context.Context // ends, and the loops with it, when the test ends
	wg         *sync.WaitGroup
}

func openRoom(t *testing.T) room {
	t.Helper()
	set := openSet(t, func(o *sandbox.Options) { o.MaxConcurrent = 4 }, func(dir string) {
		sandboxtest.Install(t, dir, "loop", "loop", spec)
		sandboxtest.Install(t, dir, "echo", "echo", spec)
	})
	spinning, stop := context.WithCancel(context.Background())
	r := room{set: set, loop: set.tool(t, "loop"), echo: set.tool(t, "echo"), spinning: spinning, wg: &sync.WaitGroup{}}
	t.Cleanup(func() {
		stop()
		r.wg.Wait()
	})
	return r
}

// spin runs loop on a goroutine of its own, in the context caller makes
// of the room's spinning context (the caller's session or address).
func (r room) spin(caller func(context.Context) context.Context) {
	r.wg.Go(func() { r.loop.Execute(caller(r.spinning), json.RawMessage(`{}`)) })
}

// TestSessionsShareTheRoom: the calls of runs that sessions' tokens
// started (toolgate.CallerSession in their context, as the engine sets
// it) have a share of the calls running at once: one session holds at
// most half of it, all sessions together three quarters of the slots,
// so a session spinning many calls neither starves another session nor
// the agent key, whose call runs at once.
func TestSessionsShareTheRoom(t *testing.T) {
	r := openRoom(t)
	set, echo := r.set, r.echo
	spinFor := func(sid string, n int) {
		for range n {
			r.spin(func(ctx context.Context) context.Context { return toolgate.WithCallerSession(ctx, sid) })
		}
	}
	callAs := func(sid string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if sid != "" {
			ctx = toolgate.WithCallerSession(ctx, sid)
		}
		_, err := echo.Execute(ctx, json.RawMessage(`{"text": "hi"}`))
		return err
	}

	// One session's eight spinning calls hold one slot, its share.
	spinFor("s1", 8)
	testwait.Until(t, 10*time.Second, "s1's first loop to run", func() bool { return set.Running() == 1 })
	if err := callAs("s2", 20*time.Second); err != nil {
		t.Fatalf("another session's call beside one session's eight: %v", err)
	}
	if got := set.Running(); got != 1 {
		t.Fatalf("%d calls run; want s1's one", got)
	}
	// Sessions together fill their share, three slots of four…
	spinFor("s3", 2)
	spinFor("s4", 2)
	testwait.Until(t, 10*time.Second, "the sessions' loops to fill their share", func() bool { return set.Running() == 3 })
	if err := callAs("s5", 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a session's call past the sessions' share: %v; want it to wait until its deadline", err)
	}
	// …and the agent key's call runs at once in the fourth.
	if err := callAs("", 20*time.Second); err != nil {
		t.Fatalf("the agent key's call beside the sessions' spinning calls: %v", err)
	}
}

// TestAddressesShareTheRoom: the sessions of one client address
// (toolgate.CallerAddress) hold together at most one session's share of
// slots, so many cheap sessions from one address spinning calls cannot
// starve a session from another address.
func TestAddressesShareTheRoom(t *testing.T) {
	r := openRoom(t)
	set, echo := r.set, r.echo
	as := func(ctx context.Context, sid, addr string) context.Context {
		return toolgate.WithCallerAddress(toolgate.WithCallerSession(ctx, sid), addr)
	}
	// Three sessions of one address, two spinning calls each.
	for _, sid := range []string{"a1", "a2", "a3"} {
		for range 2 {
			r.spin(func(ctx context.Context) context.Context { return as(ctx, sid, "127.0.0.21") })
		}
	}
	testwait.Until(t, 10*time.Second, "the address's first loop to run", func() bool { return set.Running() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := echo.Execute(as(ctx, "b1", "127.0.0.22"), json.RawMessage(`{"text": "hi"}`)); err != nil {
		t.Fatalf("a session of another address beside one address's three sessions: %v", err)
	}
	if got := set.Running(); got != 1 {
		t.Fatalf("%d calls run; want the address's one", got)
	}
}
