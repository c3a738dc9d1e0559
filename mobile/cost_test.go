package mobile_test

import (
	"errors"
	"math"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// TestHandlerReportsCost: a tool declares its estimate with ToolOptions;
// a handler reports what its call cost with Call.ReportCost, and the
// gateway stores it beside the estimate, for a result and for an error
// alike. A cost that is not one is refused at once, and not sent.
func TestHandlerReportsCost(t *testing.T) {
	g := gatewaytest.Start(t)
	client, _ := newTestClient(t, g, mobile.TransportSSE)
	opts := mobile.NewToolOptions()
	opts.EstimatedCost = 0.5
	for _, name := range []string{"paid", "paid_failing"} {
		if err := client.RegisterToolWithOptions(name, "A paid lookup", "", opts); err != nil {
			t.Fatal(err)
		}
	}
	refused := make(chan error, 4)
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		refused <- call.ReportCost(-1)
		refused <- call.ReportCost(math.NaN())
		if err := call.ReportCost(9); err != nil { // replaced below
			return "", err
		}
		if call.ToolName() == "paid_failing" {
			if err := call.ReportCost(0.2); err != nil {
				return "", err
			}
			return "", errors.New("upstream failed after being paid")
		}
		if err := call.ReportCost(0.3); err != nil {
			return "", err
		}
		return `{"hits":3}`, nil
	}))
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]struct {
		status toolgate.CallStatus
		cost   float64
	}{"paid": {toolgate.StatusCompleted, 0.3}, "paid_failing": {toolgate.StatusFailed, 0.2}} {
		call := callTool(t, g, client.SessionID(), tool, `{}`)
		if call.Status != want.status || call.Cost == nil || *call.Cost != want.cost || call.EstimatedCost == nil || *call.EstimatedCost != 0.5 {
			t.Errorf("%s: %+v (cost %v, estimate %v)", tool, call, call.Cost, call.EstimatedCost)
		}
		for range 2 {
			if err := <-refused; err == nil {
				t.Errorf("%s: a bad cost was taken", tool)
			}
		}
	}
}
