package engine

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate"
)

// WaitCallProgress returns a call once it has ended, passing each progress
// report stored meanwhile to progress (when not nil; a report that comes
// while progress still runs may be missed, as the latest one is on the
// call record). A report stored before the watch began (the client was
// quick) is passed on from the record. It returns ctx's error when ctx
// ends first; the call goes on.
func (e *Calls) WaitCallProgress(ctx context.Context, id string, progress func(json.RawMessage)) (*toolgate.Call, error) {
	updates, stop := e.progress.watch(id)
	defer stop()
	var told json.RawMessage // the last report passed on
	tell := func(p json.RawMessage) {
		if progress != nil && len(p) > 0 && !bytes.Equal(p, told) {
			told = p
			progress(p)
		}
	}
	for {
		ended, _ := e.waiters.wait(id)
		c, err := e.GetCall(ctx, id)
		if err != nil || c.Status.Final() {
			e.waiters.release(id, ended)
			return c, err
		}
		tell(c.Progress)
		select {
		case <-ended:
			// The call ended; read it again.
		case p := <-updates:
			e.waiters.release(id, ended)
			tell(p)
		case <-ctx.Done():
			e.waiters.release(id, ended)
			return nil, ctx.Err()
		}
	}
}
