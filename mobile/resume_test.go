package mobile_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// childURLEnv, when set, makes the test binary run as a client process
// (see runChildClient) instead of running tests.
const (
	childURLEnv   = "TOOLGATE_TEST_CHILD_URL"
	childStateEnv = "TOOLGATE_TEST_CHILD_STATE"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(childURLEnv); url != "" {
		runChildClient(url, os.Getenv(childStateEnv))
		return
	}
	os.Exit(m.Run())
}

// runChildClient offers slow_job, whose handler says what it received and
// never answers, and runs until it is killed.
func runChildClient(url, statePath string) {
	client := mobile.NewClient(url)
	client.SetSessionStore(mobile.NewFileSessionStore(statePath))
	if err := client.RegisterTool("slow_job", "A job that takes long", ""); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	client.SetHandler(blockingHandler{})
	if err := client.Connect(); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("CONNECTED", client.SessionID())
	select {}
}

type blockingHandler struct{}

func (blockingHandler) Handle(callID, toolName, argsJSON string) (string, error) {
	fmt.Println("RECEIVED", callID)
	select {}
}

// startChildClient runs the test binary as a client process and returns it
// with a channel of the lines it prints.
func startChildClient(t *testing.T, url, statePath string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childURLEnv+"="+url, childStateEnv+"="+statePath)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines
}

// expectLine waits for the child's next line, which must start with prefix,
// and returns the rest.
func expectLine(t *testing.T, lines <-chan string, prefix string) string {
	t.Helper()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("the child exited before printing %s", prefix)
		}
		rest, found := strings.CutPrefix(line, prefix+" ")
		if !found {
			t.Fatalf("child printed %q, want %s ...", line, prefix)
		}
		return rest
	case <-time.After(20 * time.Second):
		t.Fatalf("the child printed no %s line in 20s", prefix)
	}
	return ""
}

// answerAfterRestart connects a client from the stored session and checks
// that it answers the call left open.
func answerAfterRestart(t *testing.T, g *gatewaytest.Gateway, statePath, sessionID, callID string) {
	t.Helper()
	// The gateway records a delivery within 100 ms of sending it (or with the answer).
	testwait.Until(t, 5*time.Second, "the call delivered before the restart", func() bool {
		return getCall(t, g, callID, 0).Status == toolgate.StatusDelivered
	})
	client, _ := newTestClient(t, g, mobile.TransportAuto)
	client.SetSessionStore(mobile.NewFileSessionStore(statePath))
	if err := client.RegisterTool("slow_job", "A job that takes long", ""); err != nil {
		t.Fatal(err)
	}
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		return fmt.Sprintf(`{"finished_by":"second client","attempt":%d}`, call.Attempt()), nil
	}))
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	if client.SessionID() != sessionID {
		t.Fatalf("restarted client is on session %s, want the stored %s", client.SessionID(), sessionID)
	}
	done := getCall(t, g, callID, 15000)
	if done.Status != toolgate.StatusCompleted || !strings.Contains(string(done.Output), `"finished_by":"second client"`) {
		t.Fatalf("after the restart the call is %s with output %s, error %+v", done.Status, done.Output, done.Error)
	}
}

func TestKilledClientRestartedFromItsStateAnswersOpenCalls(t *testing.T) {
	g := gatewaytest.Start(t)
	statePath := filepath.Join(t.TempDir(), "session.json")
	child, lines := startChildClient(t, g.URL, statePath)
	sessionID := expectLine(t, lines, "CONNECTED")

	call := startCall(t, g, sessionID, "slow_job", `{}`, 60000)
	if got := expectLine(t, lines, "RECEIVED"); got != call.ID {
		t.Fatalf("child received %s, want %s", got, call.ID)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	answerAfterRestart(t, g, statePath, sessionID, call.ID)
}

func TestClosedClientReconnectedAnswersOpenCalls(t *testing.T) {
	g := gatewaytest.Start(t)
	statePath := filepath.Join(t.TempDir(), "session.json")
	first, _ := newTestClient(t, g, mobile.TransportSSE)
	first.SetSessionStore(mobile.NewFileSessionStore(statePath))
	first.RegisterTool("slow_job", "A job that takes long", "")
	received := make(chan *mobile.Call, 1)
	first.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		received <- call
		call.WaitCancelled(-1)
		return `"too late"`, nil
	}))
	if err := first.Connect(); err != nil {
		t.Fatal(err)
	}
	call := startCall(t, g, first.SessionID(), "slow_job", `{}`, 60000)
	var running *mobile.Call
	select {
	case running = <-received:
	case <-time.After(15 * time.Second):
		t.Fatal("the first client never received the call")
	}
	first.Close()
	if !running.Cancelled() || running.CancelReason() != mobile.CancelClientClosed {
		t.Errorf("after Close the running call is cancelled=%v (%q)", running.Cancelled(), running.CancelReason())
	}
	answerAfterRestart(t, g, statePath, first.SessionID(), call.ID)
}

// The same Client closed with a call running and connected again runs the
// call again and answers it.
func TestSameClientClosedAndConnectedAgainAnswersTheCallItCutShort(t *testing.T) {
	g := gatewaytest.Start(t)
	client, _ := newTestClient(t, g, mobile.TransportSSE)
	client.RegisterTool("slow_job", "A job that takes long", "")
	runs := make(chan *mobile.Call, 2)
	var count atomic.Int32
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		runs <- call
		if count.Add(1) == 1 {
			call.WaitCancelled(20000)
			return `"cut short"`, nil
		}
		return `"second run"`, nil
	}))
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	call := startCall(t, g, client.SessionID(), "slow_job", `{}`, 60000)
	select {
	case <-runs:
	case <-time.After(15 * time.Second):
		t.Fatal("the call never ran")
	}
	client.Close()
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	done := getCall(t, g, call.ID, 15000)
	if done.Status != toolgate.StatusCompleted || string(done.Output) != `"second run"` {
		t.Fatalf("after Close and Connect the call is %s with %s", done.Status, done.Output)
	}
}
