package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/devcert"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// TestServeAllowedHostsFlag: --allowed-hosts (or TOOLGATE_ALLOWED_HOSTS) is
// a comma list; an entry with a scheme is refused, naming it.
func TestServeAllowedHostsFlag(t *testing.T) {
	t.Setenv("TOOLGATE_ALLOWED_HOSTS", "")
	os.Unsetenv("TOOLGATE_ALLOWED_HOSTS")
	cfg, _, err := serveFlags([]string{"--allowed-hosts", " gw.example.com, *.example.org ,"})
	if err != nil || strings.Join(cfg.AllowedHosts, "|") != "gw.example.com|*.example.org" {
		t.Errorf("from the flag: %q, %v", cfg.AllowedHosts, err)
	}
	if _, _, err := serveFlags([]string{"--allowed-hosts", "https://gw.example.com"}); err == nil || !strings.Contains(err.Error(), `"https://gw.example.com"`) {
		t.Errorf("a URL as a host: %v", err)
	}
	t.Setenv("TOOLGATE_ALLOWED_HOSTS", "*")
	if cfg, _, err := serveFlags(nil); err != nil || strings.Join(cfg.AllowedHosts, "|") != "*" {
		t.Errorf("from the environment: %q, %v", cfg.AllowedHosts, err)
	}
}

// TestServeTLSFlags: --tls-cert and --tls-key come from the flags or from
// TOOLGATE_TLS_CERT and TOOLGATE_TLS_KEY (a flag wins over its variable),
// and one without the other is refused naming what is missing.
func TestServeTLSFlags(t *testing.T) {
	t.Setenv("TOOLGATE_TLS_CERT", "")
	t.Setenv("TOOLGATE_TLS_KEY", "")
	os.Unsetenv("TOOLGATE_TLS_CERT")
	os.Unsetenv("TOOLGATE_TLS_KEY")

	cfg, _, err := serveFlags(nil)
	if err != nil || cfg.TLSCert != "" || cfg.TLSKey != "" {
		t.Errorf("no TLS settings: cert %q key %q, %v", cfg.TLSCert, cfg.TLSKey, err)
	}
	cfg, _, err = serveFlags([]string{"--tls-cert", "c.pem", "--tls-key", "k.pem"})
	if err != nil || cfg.TLSCert != "c.pem" || cfg.TLSKey != "k.pem" {
		t.Errorf("from flags: cert %q key %q, %v", cfg.TLSCert, cfg.TLSKey, err)
	}
	if _, _, err := serveFlags([]string{"--tls-cert", "c.pem"}); err == nil || !strings.Contains(err.Error(), "without a tls key") {
		t.Errorf("a cert without a key: %v", err)
	}
	if _, _, err := serveFlags([]string{"--tls-key", "k.pem"}); err == nil || !strings.Contains(err.Error(), "without a tls cert") {
		t.Errorf("a key without a cert: %v", err)
	}

	t.Setenv("TOOLGATE_TLS_CERT", "/etc/env-cert.pem")
	t.Setenv("TOOLGATE_TLS_KEY", "/etc/env-key.pem")
	cfg, _, err = serveFlags(nil)
	if err != nil || cfg.TLSCert != "/etc/env-cert.pem" || cfg.TLSKey != "/etc/env-key.pem" {
		t.Errorf("from the environment: cert %q key %q, %v", cfg.TLSCert, cfg.TLSKey, err)
	}
	cfg, _, err = serveFlags([]string{"--tls-key", "flag-key.pem"})
	if err != nil || cfg.TLSCert != "/etc/env-cert.pem" || cfg.TLSKey != "flag-key.pem" {
		t.Errorf("a flag over its variable: cert %q key %q, %v", cfg.TLSCert, cfg.TLSKey, err)
	}
}

// TestServeRefusesBadTLSFilesBeforeBinding: the binary with a key that is
// not its certificate's exits with an error naming it, and has bound
// nothing and created no database.
func TestServeRefusesBadTLSFilesBeforeBinding(t *testing.T) {
	one, err := devcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := devcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "toolgate.db")
	cmd := exec.Command(gatewaytest.Binary(t), "serve", "--addr", "127.0.0.1:0", "--db", db,
		"--tls-cert", one.CertFile, "--tls-key", other.KeyFile)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("serve started with a mismatched key:\n%s", out)
	}
	if !strings.Contains(string(out), "private key does not match public key") || strings.Contains(string(out), "serving on") {
		t.Errorf("output:\n%s", out)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created (stat: %v)", err)
	}
}

// TestServeTLSWithConnect: `toolgate serve --tls-cert --tls-key` prints
// https URLs (the console link among them) and serves the console over
// HTTP/2; `toolgate connect`, trusting the certificate's authority as a
// system one (SSL_CERT_FILE), connects over it and answers a call.
func TestServeTLSWithConnect(t *testing.T) {
	certs, err := devcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := gatewaytest.Start(t, "--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile)
	if !strings.HasPrefix(g.URL, "https://127.0.0.1:") {
		t.Fatalf("serving on %q, want https://127.0.0.1:PORT", g.URL)
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: certs.Roots}, ForceAttemptHTTP2: true,
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(g.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("console: HTTP/%d %d %s, %d bytes", resp.ProtoMajor, resp.StatusCode, resp.Header.Get("Content-Type"), len(page))
	}

	dir := t.TempDir()
	writeTool(t, dir, "echo.sh", "cat", `{"description":"Echo the arguments","parameters":{"type":"object"}}`)
	statePath := filepath.Join(t.TempDir(), "state.json")
	connect := exec.Command(gatewaytest.Binary(t), "connect", "--url", g.URL, "--tools-dir", dir, "--state", statePath)
	connect.Env = append(os.Environ(), "SSL_CERT_FILE="+certs.CAFile, "SSL_CERT_DIR="+t.TempDir())
	var connectLog bytes.Buffer
	connect.Stderr = &connectLog
	if err := connect.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		connect.Process.Signal(syscall.SIGTERM)
		connect.Wait()
		if t.Failed() {
			t.Logf("connect log:\n%s", connectLog.String())
		}
	}()
	var sid string
	testwait.Until(t, 20*time.Second, "connect stores its session", func() bool {
		state, err := mobile.NewFileSessionStore(statePath).Load()
		if err == nil && state != nil {
			sid = state.SessionID
		}
		return sid != ""
	})
	var rec toolgate.Call
	testwait.Until(t, 20*time.Second, "echo answered over HTTPS", func() bool {
		body, _ := json.Marshal(map[string]any{"session_id": sid, "tool": "echo", "args": map[string]string{"text": "over https"}, "timeout_ms": 5000})
		req, _ := http.NewRequest("POST", g.URL+"/v1/calls", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+g.AgentKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&rec)
		return rec.Status == toolgate.StatusCompleted
	})
	if string(rec.Output) != `{"text":"over https"}` {
		t.Errorf("echo output %s", rec.Output)
	}
}
