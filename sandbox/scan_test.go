package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// TestToolsComeAndGo: a module added to the directory is listed (the
// watchers told) and callable; a changed NAME.json is taken; a module
// that stops compiling is dropped, and listed again once fixed; a module
// removed is gone, and a call of it held from before fails clearly.
func TestToolsComeAndGo(t *testing.T) {
	set := openSet(t, nil, nil)
	var changes atomic.Int32
	set.Watch(func() { changes.Add(1) })
	if len(set.Tools()) != 0 {
		t.Fatalf("an empty directory lists %v", set.names())
	}

	sandboxtest.Install(t, set.dir, "echo", "echo", spec)
	set.Scan()
	if changes.Load() != 1 || strings.Join(set.names(), " ") != "echo" {
		t.Fatalf("after adding echo: %v listed, %d changes", set.names(), changes.Load())
	}
	if _, err := set.call(t, "echo", `{"text": "x"}`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	set.Scan()
	if changes.Load() != 1 {
		t.Fatal("a scan that found nothing new told the watchers")
	}

	writeFile(t, filepath.Join(set.dir, "echo.json"), `{"description": "shouts", "timeout_ms": 2500, "read_only": true}`)
	set.Scan()
	tool := set.tool(t, "echo")
	if spec := toolgate.SpecOf(tool); spec.Description != "shouts" || spec.TimeoutMS != 2500 || !spec.ReadOnly {
		t.Fatalf("after changing echo.json: %+v", spec)
	}

	writeFile(t, filepath.Join(set.dir, "echo.wasm"), "\x00asm\x01\x00") // half written
	set.Scan()
	if len(set.Tools()) != 0 || !strings.Contains(set.log.String(), "echo.wasm does not compile") {
		t.Fatalf("a module that does not compile: %v listed; log:\n%s", set.names(), set.log.String())
	}
	sandboxtest.Install(t, set.dir, "echo", "echo", "")
	set.Scan()
	if strings.Join(set.names(), " ") != "echo" {
		t.Fatalf("the fixed module is not listed again: %v", set.names())
	}

	held := set.tool(t, "echo")
	for _, file := range []string{"echo.wasm", "echo.json"} {
		if err := os.Remove(filepath.Join(set.dir, file)); err != nil {
			t.Fatal(err)
		}
	}
	set.Scan()
	if len(set.Tools()) != 0 {
		t.Fatalf("removed module still listed: %v", set.names())
	}
	_, err := held.Execute(t.Context(), []byte(`{}`))
	if te := toolError(t, err, toolgate.EToolNotFound); !strings.Contains(te.Message, "was removed") {
		t.Fatalf("a call of a removed tool: %q", te.Message)
	}
}

// TestWatcherPollsTheDirectory: with a poll interval, a module added and
// removed is seen without anyone calling Scan.
func TestWatcherPollsTheDirectory(t *testing.T) {
	set := openSet(t, func(o *sandbox.Options) { o.Poll = 20 * time.Millisecond }, nil)
	sandboxtest.Install(t, set.dir, "echo", "echo", spec)
	testwait.Until(t, 10*time.Second, "echo listed", func() bool { return len(set.Tools()) == 1 })
	os.Remove(filepath.Join(set.dir, "echo.wasm"))
	testwait.Until(t, 10*time.Second, "echo dropped", func() bool { return len(set.Tools()) == 0 })
}

// TestBadToolsAreLeftOut: a tool whose NAME.json or NAME.wasm is wrong
// is logged, saying why, and not listed; the good one beside it is.
func TestBadToolsAreLeftOut(t *testing.T) {
	cases := []struct{ file, wasm, json, reason string }{
		{"unknown_field", "echo", `{"description": "x", "color": "red"}`, `unknown field \"color\"`},
		{"no_description", "echo", `{"parameters": {"type": "object"}}`, "description is required"},
		{"twice", "echo", `{"description": "x", "description": "y"}`, "description"},
		{"bad_timeout", "echo", `{"description": "x", "timeout_ms": -1}`, "timeout_ms"},
		{"too_much_memory", "echo", `{"description": "x", "memory_limit_mb": 4096}`, "memory_limit_mb must be from 1 to 1024"},
		{"too_little_memory", "echo", `{"description": "x", "memory_limit_mb": 1}`, "above its limit of 1 MiB"},
		{"not_json", "echo", `description: x`, "not_json.json"},
		{"no_json", "echo", ``, "has no no_json.json beside it"},
		{"bad name", "echo", spec, "is not a tool name"},
		{"current_time", "echo", spec, "a built-in tool has it"},
		{"not_wasm", "", spec, "not_wasm.wasm does not compile"},
		{"no_start", "", spec, "exports no _start function"},
	}
	set := openSet(t, func(o *sandbox.Options) {
		o.Admit = func(name string) error {
			if name == "current_time" {
				return errors.New("a built-in tool has it")
			}
			return nil
		}
	}, func(dir string) {
		sandboxtest.Install(t, dir, "echo", "good", spec)
		for _, c := range cases {
			switch c.file {
			case "not_wasm":
				writeFile(t, filepath.Join(dir, c.file+".wasm"), "#!/bin/sh\necho hi\n")
			case "no_start":
				writeFile(t, filepath.Join(dir, c.file+".wasm"), "\x00asm\x01\x00\x00\x00") // an empty module
			default:
				sandboxtest.Install(t, dir, c.wasm, c.file, "")
			}
			if c.json != "" {
				writeFile(t, filepath.Join(dir, c.file+".json"), c.json)
			}
		}
	})
	if got := strings.Join(set.names(), " "); got != "good" {
		t.Fatalf("listed %q; want only good", got)
	}
	log := set.log.String()
	for _, c := range cases {
		if !strings.Contains(log, c.reason) {
			t.Errorf("%s: the log does not say %q", c.file, c.reason)
		}
	}
	if t.Failed() {
		t.Log(log)
	}
	// Logged once, not at every scan.
	set.Scan()
	if again := set.log.String(); strings.Count(again, "unknown_field") != strings.Count(log, "unknown_field") {
		t.Fatalf("a scan logged a known problem again:\n%s", again)
	}
}

// writeFile writes a file, failing t.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCloseDoesNotWaitForACompile: Close returns within CloseWait while
// a module is being compiled (wazero cannot cancel the compile of one
// function, and a module can be made slow to compile); the compile ends
// on its own later and lists nothing.
func TestCloseDoesNotWaitForACompile(t *testing.T) {
	set := openSet(t, func(o *sandbox.Options) {
		o.CacheDir = "" // compiled for real, not found in the tests' cache
		o.CloseWait = 100 * time.Millisecond
	}, nil)
	writeFile(t, filepath.Join(set.dir, "slow.wasm"), slowToCompile(15_000))
	writeFile(t, filepath.Join(set.dir, "slow.json"), spec)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		set.Scan()
	}()
	time.Sleep(300 * time.Millisecond) // the compile has begun
	start := time.Now()
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	select {
	case <-scanned:
		t.Fatalf("Close returned after the scan compiling the module ended (%s); want it not to wait for the compile", took)
	default:
	}
	if took > 2*time.Second {
		t.Fatalf("Close took %s", took)
	}
	select {
	case <-scanned:
	case <-time.After(2 * time.Minute):
		t.Fatal("the abandoned compile did not end")
	}
	if len(set.Tools()) != 0 {
		t.Fatalf("a closed set lists %v", set.names())
	}
}

// slowToCompile is a command whose _start is one function of n blocks
// over 127 locals: a few hundred KiB that wazero's compiler takes
// seconds to compile, without looking at its context meanwhile.
func slowToCompile(n int) string {
	body := []byte{1, 0x80, 0x02, 0x7f} // 256 locals of type i32
	for i := range n {
		l := byte(i % 127)
		// block; br_if 0 (local l); local l = local l + local l+1; end
		body = append(body, 0x02, 0x40, 0x20, l, 0x0d, 0, 0x20, l, 0x20, (l+1)%127, 0x6a, 0x21, l, 0x0b)
	}
	return commandWith(nil, nil, append(body, 0x0b))
}
