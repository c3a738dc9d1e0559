package sandbox_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestModuleAnswers: a module reads its arguments on standard input and
// its answer on standard output is the call's output; it sees no host
// environment and no argument but its name. Output that is not JSON, or
// over 1 MiB, is a clear error.
func TestModuleAnswers(t *testing.T) {
	set := openSet(t, nil, func(dir string) { sandboxtest.Install(t, dir, "echo", "echo", spec) })
	out, err := set.call(t, "echo", `{"text": "hello"}`, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := decode[struct {
		Upper string   `json:"upper"`
		Argv  []string `json:"argv"`
		Env   []string `json:"env"`
	}](t, out)
	if got.Upper != "HELLO" || strings.Join(got.Argv, " ") != "echo" || len(got.Env) != 0 {
		t.Fatalf("answer %s; want HELLO, argv [echo] and no environment", out)
	}

	_, err = set.call(t, "echo", `{"raw": "plain words"}`, 10*time.Second)
	if te := toolError(t, err, sandbox.CodeToolError); !strings.Contains(te.Message, "not one JSON value") || !strings.Contains(te.Message, "plain words") {
		t.Fatalf("text on standard output: %q", te.Message)
	}
	_, err = set.call(t, "echo", `{"big": 1100000}`, 10*time.Second)
	if te := toolError(t, err, toolgate.EPayloadTooLarge); !strings.Contains(te.Message, "1048576 bytes") {
		t.Fatalf("output over 1 MiB: %q", te.Message)
	}
	emptyDir(t, set.scratch)
}

// TestLoopingModuleIsInterrupted: a module that spins or sleeps forever
// ends when its call's context does, promptly, and calls of other tools
// go on meanwhile.
func TestLoopingModuleIsInterrupted(t *testing.T) {
	set := openSet(t, nil, func(dir string) {
		sandboxtest.Install(t, dir, "loop", "loop", spec)
		sandboxtest.Install(t, dir, "echo", "echo", spec)
	})
	for _, args := range []string{`{}`, `{"sleep": true}`} {
		var wg sync.WaitGroup
		var loopErr error
		var loopTook time.Duration
		wg.Go(func() {
			start := time.Now()
			_, loopErr = set.call(t, "loop", args, 500*time.Millisecond)
			loopTook = time.Since(start)
		})
		if _, err := set.call(t, "echo", `{"text": "meanwhile"}`, 10*time.Second); err != nil {
			t.Fatalf("a call beside a looping module: %v", err)
		}
		wg.Wait()
		if !errors.Is(loopErr, context.DeadlineExceeded) {
			t.Fatalf("loop %s: %v; want the context's deadline", args, loopErr)
		}
		if loopTook > 5*time.Second {
			t.Fatalf("loop %s was interrupted after %s", args, loopTook)
		}
	}
	emptyDir(t, set.scratch)
}

// TestModuleOverItsMemoryLimit: a module that allocates without end is
// refused memory past memory_limit_mb and its call fails saying so.
func TestModuleOverItsMemoryLimit(t *testing.T) {
	set := openSet(t, nil, func(dir string) {
		sandboxtest.Install(t, dir, "alloc", "alloc", `{"description": "eats memory", "memory_limit_mb": 16}`)
	})
	start := time.Now()
	_, err := set.call(t, "alloc", `{}`, 20*time.Second)
	te := toolError(t, err, sandbox.CodeToolError)
	if te.Details["memory_limit_exceeded"] != true || !strings.Contains(te.Message, "limit of 16 MiB (memory_limit_mb)") || !strings.Contains(te.Message, "out of memory") {
		t.Fatalf("error %q %v; want the memory limit named", te.Message, te.Details)
	}
	t.Logf("%s after %s", te.Message, time.Since(start))
}

// TestHostFilesAreOutOfReach: a module sees its scratch directory only:
// /etc/passwd, a path climbing out of it and a symbolic link out of it
// all fail, and the module can say so.
func TestHostFilesAreOutOfReach(t *testing.T) {
	set := openSet(t, nil, func(dir string) { sandboxtest.Install(t, dir, "passwd", "passwd", spec) })
	out, err := set.call(t, "passwd", `{}`, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := decode[map[string]string](t, out)
	for _, key := range []string{"/etc/passwd", "../../../../etc/passwd", "/proc/self/environ", "symlink"} {
		if !strings.HasPrefix(got[key], "error: ") {
			t.Errorf("%s: %q; want an error", key, got[key])
		}
	}
	if strings.Contains(string(out), "root:") {
		t.Fatalf("a host file was read: %s", out)
	}
	emptyDir(t, set.scratch)
}

// TestNoNetwork: a module cannot connect to a listening host port.
func TestNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if conn, err := ln.Accept(); err == nil {
			conn.Close()
			accepted <- struct{}{}
		}
	}()
	set := openSet(t, nil, func(dir string) { sandboxtest.Install(t, dir, "socket", "socket", spec) })
	out, err := set.call(t, "socket", `{"addr": "`+ln.Addr().String()+`"}`, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := decode[map[string]string](t, out)
	if !strings.HasPrefix(got["dial"], "error: ") {
		t.Fatalf("network from the sandbox: %s; want errors", out)
	}
	select {
	case <-accepted:
		t.Fatal("the module's connection reached the host's listener")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestScratchDirectory: a module writes and reads back a file in its
// scratch directory, which is empty at the start of every call and gone
// after it; writing past scratch_limit_mb fails the call saying so.
func TestScratchDirectory(t *testing.T) {
	set := openSet(t, nil, func(dir string) {
		sandboxtest.Install(t, dir, "scratch", "scratch", `{"description": "writes", "scratch_limit_mb": 2}`)
	})
	for _, text := range []string{"first", "second"} {
		out, err := set.call(t, "scratch", `{"text": "`+text+`"}`, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := decode[struct {
			ReadBack string   `json:"read_back"`
			Before   []string `json:"before"`
		}](t, out)
		if got.ReadBack != text || len(got.Before) != 0 {
			t.Fatalf("call %s: %s; want its text read back from an empty directory", text, out)
		}
		emptyDir(t, set.scratch)
	}
	_, err := set.call(t, "scratch", `{"text": "x", "fill_mb": 3}`, 10*time.Second)
	te := toolError(t, err, sandbox.CodeToolError)
	if te.Details["scratch_limit_exceeded"] != true || !strings.Contains(te.Message, "scratch_limit_mb") {
		t.Fatalf("writing past the scratch limit: %q %v", te.Message, te.Details)
	}
	emptyDir(t, set.scratch)

	// A write far past a file's end would make it (sparse) larger than
	// the limit: it is charged what the file grows by, and refused.
	out, err := set.call(t, "scratch", `{"sparse": true}`, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := decode[map[string]string](t, out)
	if !strings.HasPrefix(got["write_at"], "error: ") || !strings.HasPrefix(got["seek_write"], "error: ") || got["size"] != "0" {
		t.Fatalf("writing one byte at 1 TiB: %s; want both refused and the file empty", out)
	}
	emptyDir(t, set.scratch)
}

// TestFailingModules: a non-zero exit is a TOOL_ERROR carrying standard
// error (its first line in the message); a panic likewise.
func TestFailingModules(t *testing.T) {
	set := openSet(t, nil, func(dir string) {
		sandboxtest.Install(t, dir, "fail", "fail", spec)
		sandboxtest.Install(t, dir, "panic", "panic", spec)
	})
	_, err := set.call(t, "fail", `{}`, 10*time.Second)
	te := toolError(t, err, sandbox.CodeToolError)
	if te.Message != "sandboxed tool fail exited with status 3: the printer is on fire" ||
		te.Details["exit_code"] != uint32(3) || te.Details["stderr"] != "the printer is on fire\nsecond line\n" {
		t.Fatalf("failing module: %q %#v", te.Message, te.Details)
	}
	_, err = set.call(t, "panic", `{}`, 10*time.Second)
	te = toolError(t, err, sandbox.CodeToolError)
	if !strings.Contains(te.Message, "exited with status 2: panic: assignment to entry in nil map") {
		t.Fatalf("panicking module: %q", te.Message)
	}
	if stderr, _ := te.Details["stderr"].(string); !strings.Contains(stderr, "goroutine 1") {
		t.Fatalf("the panic's stack is not in the details: %q", stderr)
	}

	// A module (not Go's) whose _start traps at once.
	writeFile(t, filepath.Join(set.dir, "trap.wasm"), trapModule)
	writeFile(t, filepath.Join(set.dir, "trap.json"), spec)
	set.Scan()
	_, err = set.call(t, "trap", `{}`, 10*time.Second)
	te = toolError(t, err, sandbox.CodeToolError)
	if !strings.HasPrefix(te.Message, "sandboxed tool trap crashed: wasm error: unreachable") {
		t.Fatalf("a trapping module: %q %v", te.Message, te.Details)
	}
}

// trapModule is a WASI command written by hand: one page of memory
// (exported), and a _start that executes unreachable.
const trapModule = "\x00asm\x01\x00\x00\x00" +
	"\x01\x04\x01\x60\x00\x00" + // types: () -> ()
	"\x03\x02\x01\x00" + // functions: one of type 0
	"\x05\x03\x01\x00\x01" + // memory: min 1 page
	"\x07\x13\x02\x06_start\x00\x00\x06memory\x02\x00" + // exports
	"\x0a\x05\x01\x03\x00\x00\x0b" // code: unreachable, end

// TestConcurrentCalls: calls of one tool run at once, each in its own
// instance; past MaxConcurrent a call waits for room within its deadline.
func TestConcurrentCalls(t *testing.T) {
	set := openSet(t, func(o *sandbox.Options) { o.MaxConcurrent = 8 }, func(dir string) {
		sandboxtest.Install(t, dir, "echo", "echo", spec)
	})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			text := strings.Repeat("a", i+1)
			out, err := set.call(t, "echo", `{"text": "`+text+`"}`, 20*time.Second)
			if err == nil && !strings.Contains(string(out), `"upper":"`+strings.ToUpper(text)+`"`) {
				err = errors.New("wrong answer " + string(out))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	bounded := openSet(t, func(o *sandbox.Options) { o.MaxConcurrent = 1 }, func(dir string) {
		sandboxtest.Install(t, dir, "loop", "loop", spec)
		sandboxtest.Install(t, dir, "echo", "echo", spec)
	})
	done := make(chan error, 1)
	go func() {
		_, err := bounded.call(t, "loop", `{}`, time.Second)
		done <- err
	}()
	testwait.Until(t, 10*time.Second, "the loop to take the only slot", func() bool { return bounded.Running() == 1 })
	if _, err := bounded.call(t, "echo", `{}`, 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past MaxConcurrent: %v; want it to wait until its deadline", err)
	}
	if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if _, err := bounded.call(t, "echo", `{}`, 10*time.Second); err != nil {
		t.Fatalf("after the slot was given back: %v", err)
	}
}

// TestMemoryBudgetBoundsCalls: a tool whose memory limit is above the
// budget of all calls is not listed; calls whose limits fill the budget
// make the next wait.
func TestMemoryBudgetBoundsCalls(t *testing.T) {
	// Each call counts its memory limit and its call stack's reserve.
	set := openSet(t, func(o *sandbox.Options) { o.MemoryBudgetMB = 2*sandbox.StackReserveMB + 100 }, func(dir string) {
		sandboxtest.Install(t, dir, "loop", "loop", `{"description": "spins", "memory_limit_mb": 80}`)
		sandboxtest.Install(t, dir, "echo", "echo", `{"description": "answers", "memory_limit_mb": 32}`)
		sandboxtest.Install(t, dir, "echo", "huge", `{"description": "too big", "memory_limit_mb": 300}`)
	})
	if got := strings.Join(set.names(), " "); got != "echo loop" {
		t.Fatalf("listed %q; want echo loop", got)
	}
	if !strings.Contains(set.log.String(), "memory_limit_mb 300, with 128 MiB for its call stack, is above the memory budget") {
		t.Fatalf("the log does not say why huge is left out:\n%s", set.log.String())
	}
	done := make(chan error, 1)
	go func() {
		_, err := set.call(t, "loop", `{}`, time.Second)
		done <- err
	}()
	testwait.Until(t, 10*time.Second, "the loop to take the memory budget", func() bool { return set.Running() == 1 })
	if _, err := set.call(t, "echo", `{}`, 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past the memory budget: %v; want it to wait until its deadline", err)
	}
	<-done
}

// TestOwnScratchRoot: without Options.ScratchDir the set makes its own
// directory in the system's temporary directory for its calls' scratch
// directories, and Close removes it.
func TestOwnScratchRoot(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	set := openSet(t, func(o *sandbox.Options) { o.ScratchDir = "" }, func(dir string) {
		sandboxtest.Install(t, dir, "scratch", "scratch", spec)
	})
	if _, err := set.call(t, "scratch", `{"text": "x"}`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "toolgate-sandbox-") {
		t.Fatalf("the temporary directory holds %v; want the set's scratch root", entries)
	}
	emptyDir(t, filepath.Join(tmp, entries[0].Name()))
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	emptyDir(t, tmp)
}

// TestEndlessPrinterIsStopped: a module that prints without end is
// stopped as soon as its output passes its cap, and its call fails with
// PAYLOAD_TOO_LARGE, not at its timeout.
func TestEndlessPrinterIsStopped(t *testing.T) {
	set := openSet(t, nil, func(dir string) { sandboxtest.Install(t, dir, "printer", "printer", spec) })
	for _, c := range []struct{ args, says string }{
		{`{}`, "more than 1048576 bytes on its standard output and was stopped"},
		{`{"stderr": true}`, "more than 1048576 bytes on its standard error and was stopped"},
	} {
		_, err := set.call(t, "printer", c.args, 20*time.Second)
		if te := toolError(t, err, toolgate.EPayloadTooLarge); !strings.Contains(te.Message, c.says) {
			t.Fatalf("printer %s: %q; want %q", c.args, te.Message, c.says)
		}
	}
	emptyDir(t, set.scratch)
}
