package chaos_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// chaosTool is the tool every client offers: it waits a little, at random,
// and answers with the call id and a number that names this execution.
const chaosTool = "chaos_echo"

// execution is one run of a handler for a call.
type execution struct {
	client  int
	number  int64 // unique across the test, carried in the output
	started time.Time
}

// executionLedger records every handler run of every client, by call id.
type executionLedger struct {
	next atomic.Int64

	mu    sync.Mutex
	byID  map[string][]execution
	total int
}

func newExecutionLedger() *executionLedger {
	return &executionLedger{byID: map[string][]execution{}}
}

func (l *executionLedger) record(callID string, client int) int64 {
	n := l.next.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byID[callID] = append(l.byID[callID], execution{client: client, number: n, started: time.Now()})
	l.total++
	return n
}

func (l *executionLedger) executions(callID string) []execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]execution(nil), l.byID[callID]...)
}

// chaosOutput is what the tool answers.
type chaosOutput struct {
	Call      string `json:"call"`
	Execution int64  `json:"execution"`
}

// chaosHandler answers after a random delay of up to maxDelay.
type chaosHandler struct {
	client   int
	ledger   *executionLedger
	maxDelay time.Duration
	rngMu    *sync.Mutex
	rng      *rand.Rand
}

func (h chaosHandler) HandleCall(call *mobile.Call) (string, error) {
	n := h.ledger.record(call.ID(), h.client)
	h.rngMu.Lock()
	delay := time.Duration(h.rng.Int64N(int64(h.maxDelay) + 1))
	h.rngMu.Unlock()
	time.Sleep(delay) // the tool's own work, not a wait for the test
	out, err := json.Marshal(chaosOutput{Call: call.ID(), Execution: n})
	return string(out), err
}

// redeliveryCounter is the clients' logger: it keeps no lines, but counts
// the calls the gateway sent again that the SDK had already taken (its
// at-least-once delivery, de-duplicated by call id), and keeps the last
// warnings for a failure message.
type redeliveryCounter struct {
	redelivered atomic.Int64
	mu          sync.Mutex
	warnings    []string
}

func (r *redeliveryCounter) Log(level, message string) {
	if strings.Contains(message, "delivered again; already taken") {
		r.redelivered.Add(1)
		return
	}
	if level == mobile.LevelWarn || level == mobile.LevelError {
		r.mu.Lock()
		r.warnings = append(r.warnings, level+": "+message)
		if len(r.warnings) > 50 {
			r.warnings = r.warnings[1:]
		}
		r.mu.Unlock()
	}
}

func (r *redeliveryCounter) lastWarnings() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.warnings, "\n")
}

// startClients connects n Go SDK clients to g, the first over long-poll
// and the rest over the stream (auto), each offering chaosTool with four
// workers. They are closed when the test ends.
func startClients(t *testing.T, g *gatewaytest.Gateway, n int, ledger *executionLedger, logs *redeliveryCounter, seed uint64) []*mobile.Client {
	t.Helper()
	var rngMu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 0xc1e17))
	clients := make([]*mobile.Client, n)
	for i := range clients {
		c := mobile.NewClient(g.URL)
		c.SetLogger(logs)
		c.SetClientInfo(fmt.Sprintf("chaos-client-%d", i), "1", "other")
		transport := mobile.TransportAuto
		if i == 0 {
			transport = mobile.TransportPoll
		}
		if err := c.SetTransport(transport); err != nil {
			t.Fatal(err)
		}
		c.SetWorkers(4)
		if err := c.RegisterTool(chaosTool, "Answers after a short random delay", ""); err != nil {
			t.Fatal(err)
		}
		c.SetCallHandler(chaosHandler{client: i, ledger: ledger, maxDelay: 20 * time.Millisecond, rngMu: &rngMu, rng: rng})
		if err := c.Connect(); err != nil {
			t.Fatalf("client %d: connect: %v", i, err)
		}
		t.Cleanup(c.Close)
		clients[i] = c
	}
	return clients
}
