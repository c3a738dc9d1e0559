package mobile_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// fakeProvider is a Provider made of functions, standing in for another
// app's ContentProvider.
type fakeProvider struct {
	listTools func() (string, error)
	execute   func(toolName, argsJSON, requestID string) (string, error)
	info      func() (string, error)
}

func (p *fakeProvider) ListTools() (string, error) { return p.listTools() }

func (p *fakeProvider) ExecuteTool(toolName, argsJSON, requestID string) (string, error) {
	return p.execute(toolName, argsJSON, requestID)
}

func (p *fakeProvider) GetProviderInfo() (string, error) {
	if p.info == nil {
		return `{"status":"error","error_code":"TOOL_NOT_FOUND","error_message":"get_provider_info is not offered"}`, nil
	}
	return p.info()
}

func toolList(tools ...string) func() (string, error) {
	return func() (string, error) {
		var list []map[string]any
		for _, name := range tools {
			list = append(list, map[string]any{"name": name, "description": "Reads " + name, "parameters": map[string]any{"type": "object", "properties": map[string]any{"day": map[string]any{"type": "string"}}}})
		}
		data, _ := json.Marshal(map[string]any{"tools": list})
		reply, _ := json.Marshal(map[string]any{"status": "success", "data": string(data)})
		return string(reply), nil
	}
}

func TestBridgeOffersProvidersToolsNamespacedAndPassesTheirErrors(t *testing.T) {
	g := gatewaytest.Start(t)
	client, _ := newTestClient(t, g, mobile.TransportAuto)
	bridge := mobile.NewBridge(client)

	var mu sync.Mutex
	var requests []string // tool|args|request id, as the fitness provider saw them
	fitness := &fakeProvider{
		listTools: toolList("get_steps", "get_sleep"),
		execute: func(toolName, argsJSON, requestID string) (string, error) {
			mu.Lock()
			requests = append(requests, toolName+"|"+argsJSON+"|"+requestID)
			mu.Unlock()
			return `{"status":"success","data":"{\"steps\":8042}"}`, nil
		},
		info: func() (string, error) {
			return `{"status":"success","data":"{\"provider_name\":\"Fitness\",\"scopes\":[]}"}`, nil
		},
	}
	bank := &fakeProvider{
		listTools: toolList("get_balance", "get_card", "get_history"),
		execute: func(toolName, argsJSON, requestID string) (string, error) {
			switch toolName {
			case "get_balance":
				return `{"status":"error","error_code":"AUTH_REQUIRED","error_message":"User has not authorized this data scope","resolution_hint":"Please open the app to complete authorization","authorize_intent":"com.example.bank.ACTION_AUTHORIZE"}`, nil
			case "get_card":
				return "", errors.New("the bank app's process could not be started")
			}
			return `{"status":"error","error_code":"RATE_LIMITED","error_message":"slow down"}`, nil
		},
	}
	future := &fakeProvider{listTools: toolList("teleport")}

	// One provider added before Connect, one after: both work.
	if err := bridge.AddProvider("fitness", "1", fitness); err != nil {
		t.Fatal(err)
	}
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	if err := bridge.AddProvider("bank", "1", bank); err != nil {
		t.Fatal(err)
	}
	if err := bridge.AddProvider("future", "2", future); err == nil || !strings.Contains(err.Error(), `version "2"`) {
		t.Errorf("a provider of CETP version 2 was not refused: %v", err)
	}
	if err := bridge.AddProvider("com.bad.label", "1", fitness); err == nil {
		t.Error("a label with dots was accepted")
	}
	sid := client.SessionID()

	tools := sessionTools(t, g, sid)
	for _, name := range []string{"fitness__get_steps", "fitness__get_sleep", "bank__get_balance", "bank__get_card", "bank__get_history"} {
		tool, ok := tools[name]
		if !ok {
			t.Errorf("GET /api/tools lacks %s; it has %v", name, keys(tools))
			continue
		}
		if !tool.ReadOnly || !tool.Online {
			t.Errorf("%s: read_only %v, online %v; want both", name, tool.ReadOnly, tool.Online)
		}
	}
	if len(tools) != 5 {
		t.Errorf("the session offers %v, want exactly the five bridged tools", keys(tools))
	}
	if info := bridge.ProviderInfoJSON("fitness"); !strings.Contains(info, `"provider_name":"Fitness"`) {
		t.Errorf("fitness provider info %q", info)
	}
	if info := bridge.ProviderInfoJSON("bank"); info != "" {
		t.Errorf("bank offers no info but got %q", info)
	}

	steps := callTool(t, g, sid, "fitness__get_steps", `{"day":"today"}`)
	if steps.Status != toolgate.StatusCompleted || !jsonEqual(steps.Output, `{"steps":8042}`) {
		t.Errorf("fitness__get_steps: %s %s %+v", steps.Status, steps.Output, steps.Error)
	}
	mu.Lock()
	if len(requests) != 1 || requests[0] != `get_steps|{"day":"today"}|`+steps.ID {
		t.Errorf("the provider saw %q; want its own tool name, the args and the call id", requests)
	}
	mu.Unlock()

	balance := callTool(t, g, sid, "bank__get_balance", `{}`)
	if balance.Status != toolgate.StatusFailed || balance.Error == nil || balance.Error.Code != "AUTH_REQUIRED" {
		t.Fatalf("bank__get_balance: %s %+v; want failed AUTH_REQUIRED", balance.Status, balance.Error)
	}
	if balance.Error.Message != "User has not authorized this data scope" ||
		!jsonEqual(balance.Error.Details, `{"resolution_hint":"Please open the app to complete authorization","authorize_intent":"com.example.bank.ACTION_AUTHORIZE"}`) {
		t.Errorf("bank__get_balance error %q details %s", balance.Error.Message, balance.Error.Details)
	}
	if card := callTool(t, g, sid, "bank__get_card", `{}`); card.Error == nil || card.Error.Code != "INTERNAL_ERROR" || !strings.Contains(card.Error.Message, "could not be started") {
		t.Errorf("bank__get_card with an unreachable provider: %s %+v", card.Status, card.Error)
	}
	if history := callTool(t, g, sid, "bank__get_history", `{}`); history.Error == nil || history.Error.Code != "RATE_LIMITED" {
		t.Errorf("bank__get_history: %s %+v", history.Status, history.Error)
	}

	// The bank app is updated and lists fewer tools, then the fitness app
	// is removed.
	bank.listTools = toolList("get_balance")
	if err := bridge.AddProvider("bank", "1", bank); err != nil {
		t.Fatal(err)
	}
	if err := bridge.RemoveProvider("fitness"); err != nil {
		t.Fatal(err)
	}
	tools = sessionTools(t, g, sid)
	if _, ok := tools["bank__get_balance"]; len(tools) != 1 || !ok {
		t.Errorf("after the update and the removal the session offers %v, want only bank__get_balance", keys(tools))
	}
	if got := bridge.ProviderLabelsJSON(); got != `["bank"]` {
		t.Errorf("ProviderLabelsJSON = %s", got)
	}
}

func keys(m map[string]toolgate.ToolInfo) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A tool whose provider went away between the call and its handling is
// answered TOOL_NOT_FOUND, not left hanging.
func TestBridgeCallForARemovedProviderIsToolNotFound(t *testing.T) {
	g := gatewaytest.Start(t)
	client, _ := newTestClient(t, g, mobile.TransportSSE)
	bridge := mobile.NewBridge(client)
	release := make(chan struct{})
	entered := make(chan string, 2)
	slow := &fakeProvider{
		listTools: toolList("first", "second"),
		execute: func(toolName, argsJSON, requestID string) (string, error) {
			entered <- toolName
			<-release
			return `{"status":"success","data":"{}"}`, nil
		},
	}
	if err := bridge.AddProvider("slow", "1", slow); err != nil {
		t.Fatal(err)
	}
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	sid := client.SessionID()
	// The serial executor runs "first" (held by the provider); "second"
	// waits behind it while the provider is removed.
	first := startCall(t, g, sid, "slow__first", `{}`, 15000)
	if got := receive(t, entered); got != "first" {
		t.Fatalf("the provider ran %q first", got)
	}
	second := startCall(t, g, sid, "slow__second", `{}`, 15000)
	testwait.Until(t, 10*time.Second, "the second call delivered", func() bool {
		return getCall(t, g, second.ID, 0).Status == toolgate.StatusDelivered
	})
	if err := bridge.RemoveProvider("slow"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if got := getCall(t, g, first.ID, 10000); got.Status != toolgate.StatusCompleted {
		t.Errorf("first call: %s %+v", got.Status, got.Error)
	}
	got := getCall(t, g, second.ID, 10000)
	if got.Error == nil || got.Error.Code != "TOOL_NOT_FOUND" {
		t.Errorf("second call after its provider was removed: %s %+v; want TOOL_NOT_FOUND", got.Status, got.Error)
	}
	select {
	case name := <-entered:
		t.Errorf("the removed provider was still asked to run %s", name)
	default:
	}
}
