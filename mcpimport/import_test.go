package mcpimport_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testlog"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpimport"
)

// fastOptions reconnect and look again within milliseconds.
func fastOptions(log *slog.Logger) mcpimport.Options {
	return mcpimport.Options{
		Log:            log,
		MinBackoff:     20 * time.Millisecond,
		MaxBackoff:     200 * time.Millisecond,
		CheckInterval:  100 * time.Millisecond,
		RequestTimeout: 5 * time.Second,
		StopGrace:      time.Second,
	}
}

func startImport(t *testing.T, cfg mcpimport.Config, opts mcpimport.Options) *mcpimport.Server {
	t.Helper()
	s := mcpimport.New(cfg, opts)
	s.Start()
	t.Cleanup(func() { s.Close() })
	testwait.Until(t, 15*time.Second, cfg.Name+" online", s.Online)
	return s
}

func toolNames(s *mcpimport.Server) []string {
	var out []string
	for _, t := range s.Tools() {
		out = append(out, t.Name())
	}
	return out
}

func toolNamed(t *testing.T, s *mcpimport.Server, name string) toolgate.Tool {
	t.Helper()
	for _, tool := range s.Tools() {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("no tool %s in %v", name, toolNames(s))
	return nil
}

func call(t *testing.T, s *mcpimport.Server, name, args string) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := toolNamed(t, s, name).Execute(ctx, json.RawMessage(args))
	return res.Output, err
}

func wantOutput(t *testing.T, s *mcpimport.Server, name, args, want string) {
	t.Helper()
	out, err := call(t, s, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if string(out) != want {
		t.Fatalf("%s: output %s, want %s", name, out, want)
	}
}

func wantCode(t *testing.T, err error, code string) *toolgate.Error {
	t.Helper()
	var te *toolgate.Error
	if !errors.As(err, &te) || te.Code != code {
		t.Fatalf("error %v, want a %s", err, code)
	}
	return te
}

// The tools the test server lists, as the gateway names them (the
// too-deep one left out, dotted.name mapped, the 60 x's cut and followed
// by 8 hex digits of their SHA-256).
var testToolNames = []string{"files__big", "files__dotted_name", "files__echo", "files__fail", "files__image", "files__pid", "files__slow", "files__structured", "files__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_42f2d973"}

// TestHTTPImport: a Go SDK server over Streamable HTTP, in both protocol
// revisions: its tools listed (all pages), called, its errors, progress
// and cancellation, list_changed, and a restart of the server.
func TestHTTPImport(t *testing.T) {
	for _, revision := range []struct {
		version   string
		stateless bool // the SDK serves 2026-07-28 only statelessly
	}{{"2026-07-28", true}, {"2025-11-25", false}} {
		t.Run(revision.version, func(t *testing.T) {
			ev := newServerEvents()
			server := newTestMCPServer(&mcp.ServerOptions{PageSize: 2, SupportedProtocolVersions: []string{revision.version}}, ev)
			h := startHTTPMCPServer(t, server, &mcp.StreamableHTTPOptions{Stateless: revision.stateless, PropagateRequestCancellation: revision.stateless})
			var log testlog.LockedBuffer
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(log.String())
				}
			})
			s := startImport(t, mcpimport.Config{Name: "files", Target: h.URL()}, fastOptions(log.Logger(slog.LevelDebug)))
			var changes atomic.Int32
			s.Watch(func() { changes.Add(1) })

			if got := toolNames(s); !slices.Equal(got, testToolNames) {
				t.Fatalf("tools %v, want %v", got, testToolNames)
			}
			if src := s.Source(); src.Kind != toolgate.SourceMCP || src.Server != "files" || s.Prefix() != "files__" {
				t.Fatalf("source %+v prefix %q", src, s.Prefix())
			}
			for _, skipped := range []string{"deep"} {
				if !strings.Contains(log.String(), "tool="+skipped) {
					t.Errorf("no warning about the tool %s left out in the log:\n%s", skipped, log.String())
				}
			}
			echo := toolgate.SpecOf(toolNamed(t, s, "files__echo"))
			if !echo.ReadOnly || echo.Description != "Echo the text back." {
				t.Fatalf("echo spec %+v", echo)
			}
			if d := toolNamed(t, s, "files__dotted_name").Description(); d != "Dotted" {
				t.Fatalf("dotted.name's description %q, want its title", d)
			}

			wantOutput(t, s, "files__echo", `{"text":"hi <b>"}`, `"echo: hi <b>"`)
			wantOutput(t, s, "files__structured", `{}`, `{"answer":42}`)
			wantOutput(t, s, "files__dotted_name", `null`, `"dotted"`)
			out, err := call(t, s, "files__image", `{}`)
			if err != nil || !strings.Contains(string(out), `"type":"image"`) || !strings.Contains(string(out), `"text":"a dot"`) {
				t.Fatalf("image: %s, %v; want the content array", out, err)
			}
			_, err = call(t, s, "files__fail", `{}`)
			te := wantCode(t, err, mcpimport.CodeToolError)
			if te.Message != "the disk is full" || !strings.Contains(string(te.Details["content"].(json.RawMessage)), "the disk is full") {
				t.Fatalf("fail: %+v", te)
			}

			t.Run("progress and cancellation", func(t *testing.T) {
				reports := make(chan json.RawMessage, 4)
				ctx, cancel := context.WithCancel(toolgate.WithProgressReporter(context.Background(), func(p json.RawMessage) { reports <- p }))
				done := make(chan error, 1)
				go func() {
					_, err := toolNamed(t, s, "files__slow").Execute(ctx, json.RawMessage(`{}`))
					done <- err
				}()
				if got := string(waitFor(t, reports, "a progress report")); got != `{"message":"step 1","progress":1,"total":3}` {
					t.Errorf("progress %s", got)
				}
				cancel()
				if err := waitFor(t, done, "the call to return"); !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled call: %v", err)
				}
				waitFor(t, ev.cancelled, "the server's handler to be cancelled")
			})

			t.Run("list_changed", func(t *testing.T) {
				before := changes.Load()
				server.AddTool(&mcp.Tool{Name: "added", Description: "Added later.", InputSchema: objectSchema()},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("added"), nil })
				testwait.Until(t, 10*time.Second, "files__added listed", func() bool { return slices.Contains(toolNames(s), "files__added") })
				if changes.Load() == before {
					t.Error("no Watch callback for the new tool")
				}
				wantOutput(t, s, "files__added", `{}`, `"added"`)
				server.RemoveTools("added")
				testwait.Until(t, 10*time.Second, "files__added gone", func() bool { return !slices.Contains(toolNames(s), "files__added") })
			})

			t.Run("server restarted", func(t *testing.T) {
				h.stop()
				testwait.Until(t, 10*time.Second, "files offline", func() bool { return !s.Online() })
				if got := toolNames(s); !slices.Equal(got, testToolNames) {
					t.Fatalf("offline tools %v, want the last list %v", got, testToolNames)
				}
				echo := toolNamed(t, s, "files__echo")
				wantCode(t, echo.(toolgate.Availability).Unavailable(), toolgate.EToolOffline)
				started := time.Now()
				_, err := call(t, s, "files__echo", `{"text":"x"}`)
				if te := wantCode(t, err, toolgate.EToolOffline); !strings.Contains(te.Message, "MCP server files is offline") {
					t.Errorf("offline message %q", te.Message)
				}
				if d := time.Since(started); d > time.Second {
					t.Errorf("an offline call took %s; it should fail at once", d)
				}
				h.start()
				testwait.Until(t, 10*time.Second, "files online again", s.Online)
				if err := echo.(toolgate.Availability).Unavailable(); err != nil {
					t.Fatalf("online again, Unavailable: %v", err)
				}
				wantOutput(t, s, "files__echo", `{"text":"back"}`, `"echo: back"`)
			})
		})
	}
}

// TestMaxTools: a server listing more tools than Options.MaxTools gives
// the first MaxTools.
func TestMaxTools(t *testing.T) {
	h := startHTTPMCPServer(t, newTestMCPServer(&mcp.ServerOptions{PageSize: 2}, newServerEvents()), nil)
	opts := fastOptions(nil)
	opts.MaxTools = 3
	s := startImport(t, mcpimport.Config{Name: "files", Target: h.URL()}, opts)
	if n := len(s.Tools()); n > 3 || n == 0 {
		t.Fatalf("%d tools with MaxTools 3: %v", n, toolNames(s))
	}
}

// TestUnreachableServer: a server that is not there is offline, its
// calls fail at once, and Close returns.
func TestUnreachableServer(t *testing.T) {
	h := startHTTPMCPServer(t, newTestMCPServer(nil, newServerEvents()), nil)
	h.stop()
	s := mcpimport.New(mcpimport.Config{Name: "gone", Target: h.URL()}, fastOptions(nil))
	s.Start()
	if s.Online() {
		t.Fatal("online without a server")
	}
	s.Close()
	s.Close() // idempotent
}
