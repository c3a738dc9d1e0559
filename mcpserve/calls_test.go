package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpserve"
)

// resultText is the text of a tool result's first content.
func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if text, ok := res.Content[0].(*mcp.TextContent); ok {
		return text.Text
	}
	return ""
}

// toolgate's _meta keys on tools/call are read strictly: a timeout that is
// not a whole number of milliseconds within range, or an idempotency key
// that is not a string, is an isError BAD_REQUEST naming the key, and
// nothing is stored; a good one reaches the call.
func TestCallMetaStrict(t *testing.T) {
	f := newFakeEngine()
	var (
		mu     sync.Mutex
		stored []toolgate.CallRequest
		keys   []string
	)
	f.createCall = func(_ context.Context, req toolgate.CallRequest, key string) (*toolgate.Call, error) {
		mu.Lock()
		stored = append(stored, req)
		keys = append(keys, key)
		mu.Unlock()
		return &toolgate.Call{ID: "call-1", Status: toolgate.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
	}
	f.setGateway(tool("echo"))
	_, url := serve(t, f, mcpserve.Options{})
	cs := connect(t, url+"/mcp", "2026-07-28")
	call := func(meta mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}, Meta: meta})
		if err != nil {
			t.Fatalf("tools/call with _meta %v: %v", meta, err)
		}
		return res
	}
	bad := []struct {
		key   string
		value any
	}{
		{mcpserve.MetaTimeoutMS, 1e30},
		{mcpserve.MetaTimeoutMS, -1e30},
		{mcpserve.MetaTimeoutMS, 0.5},
		{mcpserve.MetaTimeoutMS, "500"},
		{mcpserve.MetaTimeoutMS, true},
		{mcpserve.MetaIdempotencyKey, 5},
		{mcpserve.MetaIdempotencyKey, map[string]any{"k": "v"}},
	}
	for _, b := range bad {
		res := call(mcp.Meta{b.key: b.value})
		if text := resultText(res); !res.IsError || !strings.HasPrefix(text, "BAD_REQUEST") || !strings.Contains(text, b.key) {
			t.Errorf("_meta %s = %v: isError %v, %q; want BAD_REQUEST naming the key", b.key, b.value, res.IsError, text)
		}
	}
	mu.Lock()
	if len(stored) != 0 {
		t.Errorf("refused calls were stored: %v", stored)
	}
	mu.Unlock()
	res := call(mcp.Meta{mcpserve.MetaTimeoutMS: 1500, mcpserve.MetaIdempotencyKey: "k-1"})
	mu.Lock()
	defer mu.Unlock()
	if res.IsError || len(stored) != 1 || stored[0].TimeoutMS != 1500 || keys[0] != "k-1" {
		t.Errorf("a good _meta: isError %v %q, stored %v keys %v; want timeout 1500, key k-1", res.IsError, resultText(res), stored, keys)
	}
}

// heldCalls is a fakeEngine whose calls wait until released (or their
// request ends), counting the requests waiting and the cancels.
type heldCalls struct {
	waiting  atomic.Int64
	ended    atomic.Int64 // waits ended by their request
	cancels  atomic.Int64
	released chan struct{}
}

func holdCalls(f *fakeEngine) *heldCalls {
	h := &heldCalls{released: make(chan struct{})}
	f.createCall = func(_ context.Context, req toolgate.CallRequest, _ string) (*toolgate.Call, error) {
		return &toolgate.Call{ID: "call-k", Tool: req.Tool, Status: toolgate.StatusDelivered}, nil
	}
	f.waitCall = func(ctx context.Context, id string) (*toolgate.Call, error) {
		h.waiting.Add(1)
		select {
		case <-ctx.Done():
			h.ended.Add(1)
			return nil, ctx.Err()
		case <-h.released:
			return &toolgate.Call{ID: id, Status: toolgate.StatusCompleted, Output: json.RawMessage(`"done"`)}, nil
		}
	}
	f.cancelCall = func(context.Context, string) (*toolgate.Call, error) {
		h.cancels.Add(1)
		return &toolgate.Call{ID: "call-k", Status: toolgate.StatusCancelled}, nil
	}
	return h
}

// startCall sends a tools/call with an idempotency key on its own
// stateless connection; its result (or error) comes on the channel.
func startCall(ctx context.Context, t *testing.T, url, key string) chan *mcp.CallToolResult {
	cs := connect(t, url, "2026-07-28")
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}, Meta: mcp.Meta{mcpserve.MetaIdempotencyKey: key}})
		if err != nil {
			res = nil
		}
		out <- res
	}()
	return out
}

// A host that retries a tools/call with the same idempotency key and gives
// up on the first attempt still gets the call's result on the retry: the
// call is cancelled only when no request waits on it any more.
func TestRetryKeepsTheCall(t *testing.T) {
	f := newFakeEngine()
	h := holdCalls(f)
	f.setGateway(tool("echo"))
	ep, url := serve(t, f, mcpserve.Options{})
	first, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	firstDone := startCall(first, t, url+"/mcp", "retry-1")
	retryDone := startCall(context.Background(), t, url+"/mcp", "retry-1")
	testwait.Until(t, 10*time.Second, "both attempts waiting", func() bool { return h.waiting.Load() == 2 })
	giveUp()
	<-firstDone
	testwait.Until(t, 10*time.Second, "the first attempt's wait ended", func() bool { return h.ended.Load() == 1 })
	close(h.released)
	res := <-retryDone
	if res == nil || res.IsError || resultText(res) != "done" {
		t.Fatalf("the retry's result: %+v; want the call's output", res)
	}
	ep.Close() // waits for every handler: the first attempt's has decided
	if n := h.cancels.Load(); n != 0 {
		t.Errorf("the call was cancelled %d times while the retry waited on it", n)
	}
}

// When every request waiting on a call gives up, the last one cancels it.
func TestLastWaiterCancels(t *testing.T) {
	f := newFakeEngine()
	h := holdCalls(f)
	f.setGateway(tool("echo"))
	ep, url := serve(t, f, mcpserve.Options{})
	ctx, giveUp := context.WithCancel(context.Background())
	firstDone := startCall(ctx, t, url+"/mcp", "retry-2")
	retryDone := startCall(ctx, t, url+"/mcp", "retry-2")
	testwait.Until(t, 10*time.Second, "both attempts waiting", func() bool { return h.waiting.Load() == 2 })
	giveUp()
	<-firstDone
	<-retryDone
	ep.Close() // waits for every handler
	if n := h.cancels.Load(); n != 1 {
		t.Errorf("the call was cancelled %d times; want once, by the last request to give up", n)
	}
}
