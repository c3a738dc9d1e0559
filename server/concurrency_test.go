package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestManyClientsManyCallers runs concurrent callers against several
// clients over real streams: every call ends completed with its own
// answer, and group commit shares transactions between them.
func TestManyClientsManyCallers(t *testing.T) {
	g := startGateway(t, nil)
	const clients, callsPerClient = 8, 40
	sessions := make([]session, clients)
	for i := range sessions {
		sessions[i] = g.newSession(fmt.Sprintf("client-%d", i))
		g.register(sessions[i], echoTool)
		stop := answeringClient(t, g, sessions[i])
		t.Cleanup(stop)
	}
	eng := g.Server.Engine
	tx0, ops0 := g.Server.Store.Transactions(), g.Server.Store.Operations()
	var wg sync.WaitGroup
	errs := make(chan error, clients*callsPerClient)
	for i, s := range sessions {
		for j := range callsPerClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				text := fmt.Sprintf("%d/%d", i, j)
				args, _ := json.Marshal(map[string]string{"text": text})
				ctx := context.Background()
				call, err := eng.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: s.ID, Tool: "echo", Args: args}, "")
				if err != nil {
					errs <- err
					return
				}
				final, err := eng.Calls.WaitCall(ctx, call.ID, -1)
				if err != nil {
					errs <- err
					return
				}
				if final.Status != toolgate.StatusCompleted || string(final.Output) != string(args) {
					errs <- fmt.Errorf("call %s: %s %s, want completed %s", text, final.Status, final.Output, args)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	txs, ops := g.Server.Store.Transactions()-tx0, g.Server.Store.Operations()-ops0
	t.Logf("%d calls: %d write operations in %d transactions", clients*callsPerClient, ops, txs)
	if txs >= ops {
		t.Errorf("no operations were grouped: %d operations, %d transactions", ops, txs)
	}
}
