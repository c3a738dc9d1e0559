package chaos_test

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// callTimeout is every call's timeout: far longer than the gateway is ever
// down, so a call that does not complete was lost, not slow.
const callTimeout = 2 * time.Minute

// newCaller returns caller number of the chaos run: calls to chaosTool
// in sessions through baseURL, each followed for its timeout and a minute
// more.
func newCaller(number int, baseURL, agentKey string, sessions []string, kills *atomic.Int64) *gatewaytest.Caller {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 4
	return &gatewaytest.Caller{
		Number: number, KeyPrefix: "chaos", Sessions: sessions,
		BaseURL: baseURL, AgentKey: agentKey, Tool: chaosTool, Kills: kills,
		CallTimeout: callTimeout, GiveUp: callTimeout + time.Minute,
		// A safety net only: the gateway answers a wait within the
		// call's timeout, and a kill resets the connection at once.
		HTTP: &http.Client{Transport: transport, Timeout: callTimeout + 30*time.Second},
	}
}
