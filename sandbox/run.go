package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolgate/toolgate"
)

// Limits on what a module may print in one call. Past MaxStdoutBytes on
// its standard output, or MaxStderrWrittenBytes on its standard error (of
// which the first MaxStderrBytes are kept), the module is stopped at once
// and its call fails with PAYLOAD_TOO_LARGE.
const (
	MaxStdoutBytes        = 1 << 20
	MaxStderrBytes        = 64 << 10
	MaxStderrWrittenBytes = 1 << 20
	// maxMessageRunes bounds the part of standard error a call's error
	// message quotes (its details carry all of it that was kept).
	maxMessageRunes = 500
)

// CodeToolError is the error code of a call whose module failed: it
// exited non-zero, crashed, or printed something that is not JSON (as an
// imported MCP server's tool reporting a failure).
const CodeToolError = "TOOL_ERROR"

// call runs the module once with args on its standard input, in a fresh
// scratch directory under scratchRoot, and returns its standard output.
func (m *module) call(ctx context.Context, args []byte, scratchRoot string) (json.RawMessage, error) {
	dir, err := newScratchDir(scratchRoot)
	if err != nil {
		return nil, fmt.Errorf("sandboxed tool %s: make its scratch directory: %w", m.name, err)
	}
	defer os.RemoveAll(dir)
	budget := newScratchBudget(m.config.scratchBytes)
	memory := &callMemory{limit: m.config.memoryBytes - m.instanceBytes} // checkCommand made sure it is not negative
	// The module runs until ctx ends or it prints too much: an output
	// past its cap stops it at once (the runtime closes a module whose
	// context is done), rather than letting it spin until its timeout.
	run, stop := context.WithCancel(ctx)
	defer stop()
	stdout := &cappedBuffer{keep: MaxStdoutBytes, stopAfter: MaxStdoutBytes, stop: stop}
	stderr := &cappedBuffer{keep: MaxStderrBytes, stopAfter: MaxStderrWrittenBytes, stop: stop}
	config := wazero.NewModuleConfig().
		WithName(""). // instances of one module run at once
		WithArgs(m.name).
		WithStdin(bytes.NewReader(args)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(newScratchFS(dir, budget), "/")).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(sleepWithin(run)).
		WithRandSource(rand.Reader)
	mod, err := m.runtime.InstantiateModule(experimental.WithMemoryAllocator(run, memory), m.compiled, config)
	if mod != nil {
		_ = mod.Close(context.Background())
	}
	if ctx.Err() != nil {
		return nil, ctx.Err() // timed out or cancelled: the engine ends the call
	}
	if stdout.stopped {
		return nil, toolgate.Errorf(toolgate.EPayloadTooLarge, "sandboxed tool %s printed more than %d bytes on its standard output and was stopped", m.name, MaxStdoutBytes)
	}
	if stderr.stopped {
		return nil, &toolgate.Error{
			Code:    toolgate.EPayloadTooLarge,
			Message: fmt.Sprintf("sandboxed tool %s printed more than %d bytes on its standard error and was stopped", m.name, MaxStderrWrittenBytes),
			Details: map[string]any{"stderr": stderr.String()},
		}
	}
	if err != nil {
		return nil, m.failure(err, stderr, memory, budget)
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if len(out) == 0 {
		return json.RawMessage("null"), nil
	}
	if err := toolgate.CheckStrictJSON(out); err != nil {
		return nil, &toolgate.Error{
			Code:    CodeToolError,
			Message: fmt.Sprintf("sandboxed tool %s printed something that is not one JSON value on its standard output (%v): %s", m.name, err, quote(string(out))),
			Details: map[string]any{"stderr": stderr.String()},
		}
	}
	return json.RawMessage(out), nil
}

// failure describes a run that did not end with exit status 0.
func (m *module) failure(err error, stderr *cappedBuffer, memory *callMemory, budget *scratchBudget) error {
	details := map[string]any{"stderr": stderr.String()}
	var what string
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		details["exit_code"] = exit.ExitCode()
		what = fmt.Sprintf("exited with status %d", exit.ExitCode())
	} else {
		// A trap (unreachable, out-of-bounds access…): the first line,
		// without wazero's "module[] function[_start] failed: ".
		text, _, _ := strings.Cut(err.Error(), "\n")
		if _, after, ok := strings.Cut(text, "failed: "); ok {
			text = after
		}
		details["trap"] = text
		what = "crashed: " + text
	}
	var limits []string
	if memory.refused.Load() {
		details["memory_limit_exceeded"] = true
		limits = append(limits, fmt.Sprintf("reached its memory limit of %d MiB (memory_limit_mb)", m.config.memoryBytes>>20))
	}
	if budget.exceeded.Load() {
		details["scratch_limit_exceeded"] = true
		limits = append(limits, fmt.Sprintf("reached its scratch directory's limit of %d MiB (scratch_limit_mb)", m.config.scratchBytes>>20))
	}
	msg := fmt.Sprintf("sandboxed tool %s %s", m.name, what)
	if len(limits) > 0 {
		msg = fmt.Sprintf("sandboxed tool %s %s and %s", m.name, strings.Join(limits, " and "), what)
	}
	if first := firstLine(stderr.String()); first != "" {
		msg += ": " + first
	}
	return &toolgate.Error{Code: CodeToolError, Message: msg, Details: details}
}

// sleepWithin is the module's sleep: it ends early when ctx does, so a
// module sleeping through its deadline is interrupted at once.
func sleepWithin(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// firstLine is the first non-blank line of text, cut to maxMessageRunes.
func firstLine(text string) string {
	for line := range strings.Lines(text) {
		if line = strings.TrimSpace(line); line != "" {
			return quote(line)
		}
	}
	return ""
}

// quote cuts s to maxMessageRunes runes.
func quote(s string) string {
	if r := []rune(s); len(r) > maxMessageRunes {
		return string(r[:maxMessageRunes]) + "…"
	}
	return s
}

// cappedBuffer keeps the first keep bytes written; once more than
// stopAfter bytes were written it calls stop (which ends the module's
// run) and notes it. A write never fails, so the module is not stopped
// by a broken pipe before then. The module writes from one goroutine.
type cappedBuffer struct {
	bytes.Buffer
	keep, stopAfter int
	stop            func()
	written         int
	stopped         bool
}

// Write implements io.Writer.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.written += len(p)
	if room := b.keep - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	if b.written > b.stopAfter && !b.stopped {
		b.stopped = true
		b.stop()
	}
	return len(p), nil
}
