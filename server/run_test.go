package server_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/server"
)

// TestOpenBindsNothingAndCloseReleases: an opened server answers through
// its engine before any address is bound; Close is idempotent and leaves
// nothing to listen with.
func TestOpenBindsNothingAndCloseReleases(t *testing.T) {
	srv, err := server.Open(context.Background(), server.ConfigForTest(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if url := srv.URL(); url != "" {
		t.Errorf("URL() = %q before Listen, want empty", url)
	}
	if _, err := srv.Engine.Sessions.CreateSession(context.Background(), toolgate.CreateSessionRequest{}); err != nil {
		t.Errorf("create a session on an opened, unbound server: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close again: %v", err)
	}
	if err := srv.Listen(); err == nil {
		t.Error("Listen after Close succeeded")
	}
	if err := srv.Serve(context.Background()); err == nil {
		t.Error("Serve after Close succeeded")
	}
}

// TestOpenFailureLeavesNothingOpen: a step of Open that fails (here the
// engine refusing a bad tool name pattern, after the store was opened)
// returns no server and leaves no goroutine of what it had opened (the
// store's writer) behind; another Open of the same file works.
func TestOpenFailureLeavesNothingOpen(t *testing.T) {
	cfg := server.ConfigForTest(t)
	bad := cfg
	bad.ToolNamePattern = "("
	before := runtime.NumGoroutine()
	srv, err := server.Open(context.Background(), bad, nil)
	if err == nil || srv != nil {
		t.Fatalf("Open with a bad pattern = %v, %v; want no server and an error", srv, err)
	}
	if !strings.Contains(err.Error(), "tool name pattern") {
		t.Errorf("error %q does not name the tool name pattern", err)
	}
	testwait.Until(t, 5*time.Second, fmt.Sprintf("the goroutines to drop back to %d", before), func() bool {
		return runtime.NumGoroutine() <= before
	})
	good, stop := server.StartForTest(t, cfg)
	defer stop()
	resp, err := http.Get(good.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after a failed Open of the same file: %d", resp.StatusCode)
	}
}

// TestListenOnATakenAddress: Listen reports the address it could not bind;
// the opened server still closes cleanly.
func TestListenOnATakenAddress(t *testing.T) {
	first := startGateway(t, nil)
	cfg := server.ConfigForTest(t)
	cfg.Addr = strings.TrimPrefix(first.URL, "http://")
	srv, err := server.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err == nil || !strings.Contains(err.Error(), cfg.Addr) {
		t.Errorf("Listen on a taken address: %v, want an error naming %s", err, cfg.Addr)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestCloseEndsServe: Close while Serve runs stops serving; Serve returns
// without error and the address no longer answers.
func TestCloseEndsServe(t *testing.T) {
	srv, err := server.Open(context.Background(), server.ConfigForTest(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	url := srv.URL()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	g := &gateway{t: t, URL: url, Server: srv}
	if status, body := g.do("GET", "/healthz", "", nil); status != http.StatusOK {
		t.Fatalf("healthz while serving: %d %s", status, body)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of Close")
	}
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get(url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("healthz answered %d after Close", resp.StatusCode)
	}
}
