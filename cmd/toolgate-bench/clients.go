package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sync/errgroup"

	"github.com/toolgate/toolgate/mobile"
)

// The tool every benchmark client offers: it answers with its arguments.
const (
	echoTool       = "echo"
	echoToolDesc   = "Answers with its arguments"
	echoToolSchema = `{"type":"object"}`
)

// runClients is the "clients" subcommand: n clients of one system, each
// offering the echo tool, in this process. It prints
// `READY {"sessions":[...]}` once all are connected and answering, and
// closes them when its standard input closes.
func runClients(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("toolgate-bench clients", flag.ContinueOnError)
	system := fs.String("system", "", "toolgate_sse, toolgate_poll or websocket_baseline")
	url := fs.String("url", "", "gateway base URL")
	n := fs.Int("n", 1, "clients to run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *url == "" {
		return errors.New("--url and --n >= 1 are required")
	}
	connect := map[string]func(context.Context, string) (string, func(), error){
		sysSSE: func(ctx context.Context, u string) (string, func(), error) {
			return connectSDK(ctx, u, mobile.TransportSSE)
		},
		sysPoll: func(ctx context.Context, u string) (string, func(), error) {
			return connectSDK(ctx, u, mobile.TransportPoll)
		},
		sysBaseline: connectWS,
	}[*system]
	if connect == nil {
		return fmt.Errorf("--system %q has no clients", *system)
	}
	sessions := make([]string, *n)
	closers := make([]func(), *n)
	defer func() {
		for _, c := range closers {
			if c != nil {
				c()
			}
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range *n {
		g.Go(func() error {
			id, closer, err := connect(gctx, *url)
			sessions[i], closers[i] = id, closer
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]any{"sessions": sessions})
	fmt.Printf("READY %s\n", b)
	waitStdinClosed(ctx)
	return nil
}

// echoHandler is the SDK handler of the echo tool.
type echoHandler struct{}

// Handle answers with the arguments.
func (echoHandler) Handle(callID, toolName, argsJSON string) (string, error) { return argsJSON, nil }

// quietLogger drops the SDK's log lines.
type quietLogger struct{}

// Log drops the line.
func (quietLogger) Log(level, message string) {}

// connectSDK runs one mobile SDK client over transport and waits until it
// says it is connected.
func connectSDK(ctx context.Context, url, transport string) (string, func(), error) {
	c := mobile.NewClient(url)
	c.SetLogger(quietLogger{})
	c.SetClientInfo("toolgate-bench", "", "other")
	if err := c.SetTransport(transport); err != nil {
		return "", nil, err
	}
	if err := c.RegisterTool(echoTool, echoToolDesc, echoToolSchema); err != nil {
		return "", nil, err
	}
	c.SetHandler(echoHandler{})
	if err := c.Connect(); err != nil {
		return "", nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.State() != mobile.StateConnected {
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.Close()
			return "", nil, fmt.Errorf("SDK client not connected within 30s (state %s)", c.State())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c.SessionID(), c.Close, nil
}

// connectWS runs one plain WebSocket client of the baseline: it registers
// the echo tool, then answers each tool_call_request with a tool_result
// from its read loop (one call at a time, as an SDK client with one
// worker).
func connectWS(ctx context.Context, url string) (string, func(), error) {
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dialCtx, strings.Replace(url, "http://", "ws://", 1)+"/v1/ws", nil)
	if err != nil {
		return "", nil, err
	}
	conn.SetReadLimit(1 << 20)
	reg, _ := json.Marshal(wsMessage{Type: "register_tools", Tools: []wsTool{{Name: echoTool, Description: echoToolDesc, Parameters: json.RawMessage(echoToolSchema)}}})
	if err := conn.Write(dialCtx, websocket.MessageText, reg); err != nil {
		conn.CloseNow()
		return "", nil, err
	}
	var reply wsMessage
	for reply.Type != "tools_registered" {
		_, data, err := conn.Read(dialCtx)
		if err != nil {
			conn.CloseNow()
			return "", nil, err
		}
		json.Unmarshal(data, &reply)
	}
	life, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			_, data, err := conn.Read(life)
			if err != nil {
				return
			}
			var m wsMessage
			if json.Unmarshal(data, &m) != nil || m.Type != "tool_call_request" {
				continue
			}
			out, _ := json.Marshal(wsMessage{Type: "tool_result", ID: m.ID, Success: true, Output: m.Args})
			if conn.Write(life, websocket.MessageText, out) != nil {
				return
			}
		}
	}()
	return reply.SessionID, func() {
		stop()
		conn.CloseNow()
		wg.Wait()
	}, nil
}
