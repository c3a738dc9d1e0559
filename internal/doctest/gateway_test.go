package doctest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// defaultURL is the address the docs' examples name: make run's.
const defaultURL = "http://127.0.0.1:8080"

// gateway is a toolgate serve process started as make run starts it: no
// agent key given, so it generates one and writes it to the key file beside
// the database, in dir.
type gateway struct {
	url, key, dir string
}

// startGateway runs "toolgate serve" on 127.0.0.1:0 with ./toolgate.db in
// dir (a fresh temp dir when empty) and extra flags, and waits until it
// serves. It is killed when the test ends.
func startGateway(t *testing.T, dir string, extra ...string) *gateway {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	bin := gatewaytest.Binary(t)
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", "toolgate.db"}, extra...)...)
	cmd.Dir = dir
	cmd.Env = withoutToolgateEnv(os.Environ())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := logFile(t, "gateway.log")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("gateway log:\n%s", readLog(stderr))
		}
	})
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "toolgate serving on "); ok {
				urlc <- url
			}
		}
	}()
	g := &gateway{dir: dir}
	select {
	case g.url = <-urlc:
	case <-exited:
		t.Fatalf("the gateway exited at start:\n%s", readLog(stderr))
	case <-time.After(60 * time.Second):
		t.Fatalf("the gateway did not start in 60 s:\n%s", readLog(stderr))
	}
	key, err := os.ReadFile(filepath.Join(dir, "toolgate.db.agent-key"))
	if err != nil {
		t.Fatalf("the key file make run's gateway writes: %v", err)
	}
	g.key = strings.TrimSpace(string(key))
	return g
}

// withoutToolgateEnv drops the TOOLGATE_ variables of the test's own
// environment, which would configure the gateway or the blocks.
func withoutToolgateEnv(env []string) []string {
	var kept []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TOOLGATE_") && !strings.HasPrefix(kv, "AGENT_KEY=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// api sends a request with the agent key and returns the status and body.
func (g *gateway) api(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, g.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+g.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// waitForTool waits until a session of the gateway offers the tool and
// returns the session's id.
func (g *gateway) waitForTool(t *testing.T, tool string, timeout time.Duration, alive func() error) string {
	t.Helper()
	var sid string
	deadline := time.Now().Add(timeout)
	for {
		if err := alive(); err != nil {
			t.Fatal(err)
		}
		_, body := g.api(t, "GET", "/api/tools", "")
		var list struct {
			Tools []struct {
				Name   string `json:"name"`
				Source struct {
					SessionID string `json:"session_id"`
				} `json:"source"`
			} `json:"tools"`
		}
		if json.Unmarshal(body, &list) == nil {
			for _, tl := range list.Tools {
				if tl.Name == tool {
					sid = tl.Source.SessionID
				}
			}
		}
		if sid != "" {
			return sid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session offered %s within %v; tools: %s", tool, timeout, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// background is a shell block running on its own, killed with its whole
// process group when the test ends.
type background struct {
	cmd    *exec.Cmd
	out    *os.File
	exited chan struct{}
	err    error
}

// startBlock runs a shell block with bash in dir, in the background.
func startBlock(t *testing.T, dir, script string, env []string) *background {
	t.Helper()
	b := &background{out: logFile(t, "block.log"), exited: make(chan struct{})}
	b.cmd = exec.Command("bash", "-euo", "pipefail", "-c", script)
	b.cmd.Dir = dir
	b.cmd.Env = env
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.err = b.cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.exited
		if t.Failed() {
			t.Logf("output of the block run in the background:\n%s", readLog(b.out))
		}
	})
	return b
}

// alive returns an error when the block has ended.
func (b *background) alive() error {
	select {
	case <-b.exited:
		return fmt.Errorf("the block ended (%v):\n%s", b.err, readLog(b.out))
	default:
		return nil
	}
}

// runBlock runs a shell block with bash in dir and returns its output; it
// fails the test when the block fails or takes more than two minutes.
func runBlock(t *testing.T, dir, script string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the block failed: %v\n%s\n--- the block:\n%s", err, out, script)
	}
	return string(out)
}

// logFile creates a file in a temp dir of the test for a process's output.
func logFile(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readLog returns what has been written to a log file so far.
func readLog(f *os.File) string {
	data, err := os.ReadFile(f.Name())
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// readAllClose reads a response's body whole and closes it.
func readAllClose(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return string(data), err
}
