// Package sandbox runs tools compiled to WebAssembly inside the gateway:
// every NAME.wasm (a WASI preview 1 command) with a NAME.json beside it in
// a directory (toolgate serve --sandbox-dir) is the tool NAME, listed with
// source {"kind": "sandbox"} and called without a session, by POST
// /v1/calls and by the agent loop. The runtime is wazero (pure Go).
//
// The contract is toolgate connect's: a call's arguments are the module's
// standard input (JSON), its answer is its standard output (JSON; nothing
// printed is null), and a non-zero exit is a TOOL_ERROR carrying its
// standard error.
//
// Nothing leaves the sandbox. A module imports WASI preview 1 and nothing
// else, with no socket (WASI preview 1 cannot open one; none is handed
// in), no environment variable, no argument but its name, and one
// directory: a fresh scratch directory of its own, mounted as "/" (its
// working directory), removed after the call, in which it may write at
// most scratch_limit_mb (symbolic and hard links refused; a write is
// charged what it grows its file by). Its memory is capped
// (memory_limit_mb, default 64 MiB, at most 1 GiB), and the cap covers
// what its instance holds beside its linear memory (tables, globals,
// segments; a table gets a maximum if it has none: shapeModule); the
// call's timeout interrupts it (the engine cancels the context Execute
// gets); past 1 MiB printed on its standard output, or written to its
// standard error (of which 64 KiB are kept), it is stopped. A module that
// loops, allocates without end, prints without end, panics or looks for
// a host file ends its own call with a clear error.
//
// Calls of one tool run at once, each in its own instance of the module
// compiled once. How many run at once is bounded twice: by count
// (Options.MaxConcurrent) and by the sum of their memory limits, each
// with StackReserveMB for its call stack (Options.MemoryBudgetMB); a call
// waits for room, within its deadline. The calls of runs that sessions'
// tokens started have a share of both, so the agent key's calls always
// find room (room). A call that made the heap grow is followed by a
// return of the heap to the operating system (memoryFreer).
//
// The directory is looked at every Options.Poll: a module added is
// compiled and listed, one changed (name, size and modification time of
// either file) compiled again, one removed dropped; a file that does not
// compile (half-written, say) is logged and tried again when it changes.
// Compiled code is kept on disk in Options.CacheDir (wazero's compilation
// cache), so a restart does not compile again. Close cancels a compile
// and waits for it at most Options.CloseWait.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/toolgate/toolgate"
)

// Defaults of Options.
const (
	DefaultPoll           = time.Second
	DefaultMemoryBudgetMB = 1024
	DefaultMaxTools       = 256
	DefaultCloseWait      = 2 * time.Second
	// freeMemoryGap is the least time between two returns of the heap
	// to the operating system (memoryFreer).
	freeMemoryGap = time.Second
	// MaxModuleBytes bounds a NAME.wasm read (a Go module is 2 to 10
	// MiB). Compiling is what a module costs most: seconds and tens of
	// MiB for a Go module, more for a module made to be slow to compile.
	MaxModuleBytes = 32 << 20
)

// Options configure a ToolSet.
type Options struct {
	// Dir holds the tools: NAME.wasm with NAME.json beside it.
	Dir string
	// CacheDir keeps wazero's compiled code across restarts; empty keeps
	// it in memory only.
	CacheDir string
	// ScratchDir is where each call's scratch directory is made; empty is
	// a directory of the set's own in the system's temporary directory,
	// removed by Close.
	ScratchDir string
	// Poll is how often Dir is looked at for changes (default
	// DefaultPoll); negative never (a test calls Scan).
	Poll time.Duration
	// MemoryBudgetMB bounds the sum of the memory limits of the calls
	// running at once, each counted StackReserveMB more for its call
	// stack (default DefaultMemoryBudgetMB); a tool whose memory_limit_mb
	// and StackReserveMB are above it is not listed.
	MemoryBudgetMB int64
	// MaxConcurrent bounds the calls running at once (default twice the
	// number of CPUs the process may use, at least 4). The calls of runs
	// a session's token started share three quarters of it and of
	// MemoryBudgetMB, one session at most half of that share: the agent
	// key's calls always find room.
	MaxConcurrent int
	// MaxTools bounds the tools listed (default DefaultMaxTools).
	MaxTools int
	// Admit, when set, decides whether a tool may have this name (the
	// registry refuses a built-in tool's name and an imported MCP
	// server's prefix); a tool it refuses is logged and not listed.
	Admit func(name string) error
	// CloseWait bounds how long Close waits for a module being compiled
	// (default DefaultCloseWait). The compile is cancelled first, but
	// wazero checks that only between functions; past CloseWait, Close
	// returns and the runtime is freed when the compile ends.
	CloseWait time.Duration
	// Log receives what was listed, dropped or left out, and why.
	Log *slog.Logger
}

// ToolSet is the tools of a sandbox directory, an toolgate.ToolSet
// without a name prefix.
type ToolSet struct {
	opts       Options
	cache      wazero.CompilationCache
	runtime    wazero.Runtime
	ownScratch string // the scratch root Open made (Options.ScratchDir unset), removed by Close
	room       *room  // the bounds of the calls running at once

	scanMu sync.Mutex // one scan at a time
	failed map[string]failure
	life   context.Context
	stop   context.CancelFunc
	done   chan struct{}

	// calls counts the calls that acquired a module and have not ended:
	// Close frees the runtime only after they end (a call's module
	// memory is freed with the runtime, so a call still growing it would
	// race the free). Added to under mu, and never once closed is set.
	calls sync.WaitGroup

	mu       sync.Mutex
	modules  map[string]*module // listed, by name
	tools    []toolgate.Tool    // the listed ones' tools, sorted by name
	watchers []func()
	closed   bool
}

// failure is why a tool is not listed, kept so that it is logged once
// and tried again only when its files change.
type failure struct {
	files  fingerprint
	reason string
}

// Open checks the directory, looks at it once (so that its tools are
// listed from the start) and starts watching it.
func Open(opts Options) (*ToolSet, error) {
	info, err := os.Stat(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("sandbox directory %s is not a directory", opts.Dir)
	}
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
	}
	if opts.MemoryBudgetMB <= 0 {
		opts.MemoryBudgetMB = DefaultMemoryBudgetMB
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if opts.MaxTools <= 0 {
		opts.MaxTools = DefaultMaxTools
	}
	if opts.CloseWait <= 0 {
		opts.CloseWait = DefaultCloseWait
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &ToolSet{
		opts:    opts,
		room:    newRoom(opts.MaxConcurrent, opts.MemoryBudgetMB, newMemoryFreer(freeMemoryGap)),
		failed:  map[string]failure{},
		modules: map[string]*module{},
		done:    make(chan struct{}),
	}
	if s.opts.ScratchDir == "" {
		if s.opts.ScratchDir, err = os.MkdirTemp("", "toolgate-sandbox-"); err != nil {
			return nil, fmt.Errorf("sandbox: make the scratch directory: %w", err)
		}
		s.ownScratch = s.opts.ScratchDir
	}
	s.life, s.stop = context.WithCancel(context.Background())
	s.cache = openCache(opts.CacheDir, opts.Log)
	if s.runtime, err = newRuntime(s.life, s.cache); err != nil {
		s.stop()
		_ = s.cache.Close(context.Background())
		if s.ownScratch != "" {
			_ = os.RemoveAll(s.ownScratch)
		}
		return nil, err
	}
	s.Scan()
	go s.watch()
	go s.room.freer.run(s.life)
	return s, nil
}

// openCache opens wazero's compilation cache in dir, in memory when dir
// is empty or cannot be used (logged).
func openCache(dir string, log *slog.Logger) wazero.CompilationCache {
	if dir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err == nil {
			return cache
		}
		log.Warn("sandbox: the compilation cache directory cannot be used; compiled modules are kept in memory only", "dir", dir, "err", err)
	}
	return wazero.NewCompilationCache()
}

// watch scans the directory every Poll until Close.
func (s *ToolSet) watch() {
	defer close(s.done)
	if s.opts.Poll < 0 {
		return
	}
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-s.life.Done():
			return
		case <-tick.C:
			s.Scan()
		}
	}
}

// Prefix implements toolgate.ToolSet: none, each tool claims its name.
func (s *ToolSet) Prefix() string { return "" }

// Source implements toolgate.ToolSet.
func (s *ToolSet) Source() toolgate.ToolSource {
	return toolgate.ToolSource{Kind: toolgate.SourceSandbox}
}

// Online implements toolgate.ToolSet: the tools run in this process.
func (s *ToolSet) Online() bool { return true }

// Tools implements toolgate.ToolSet.
func (s *ToolSet) Tools() []toolgate.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// Watch implements toolgate.ToolSet.
func (s *ToolSet) Watch(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, fn)
}

// Close stops watching the directory and frees every module and the
// runtime once the calls still running have ended (the engine, closed
// first, has cancelled them all, and a cancelled call is interrupted).
// A module being compiled is cancelled. Close waits for the calls and the
// compile at most Options.CloseWait, after which the runtime is freed
// when they end.
func (s *ToolSet) Close() error {
	s.stop()
	s.mu.Lock()
	already := s.closed
	s.closed = true
	modules := s.modules
	s.modules, s.tools = map[string]*module{}, nil
	s.mu.Unlock()
	if already {
		return nil
	}
	for _, m := range modules {
		m.retire()
	}
	freed := make(chan error, 1)
	go func() {
		<-s.done
		s.scanMu.Lock() // a scan in flight ends first: it compiles in the runtime
		defer s.scanMu.Unlock()
		s.calls.Wait() // no call starts now (closed); those running end first
		freed <- errors.Join(s.runtime.Close(context.Background()), s.cache.Close(context.Background()))
	}()
	var err error
	select {
	case err = <-freed:
	case <-time.After(s.opts.CloseWait):
		s.opts.Log.Warn("sandbox: closed while a module is still compiling; the runtime is freed when the compile ends", "waited", s.opts.CloseWait)
	}
	if s.ownScratch != "" {
		err = errors.Join(err, os.RemoveAll(s.ownScratch))
	}
	return err
}

// changed tells the watchers that the tools changed.
func (s *ToolSet) changed() {
	s.mu.Lock()
	watchers := slices.Clone(s.watchers)
	s.mu.Unlock()
	for _, fn := range watchers {
		fn()
	}
}

// acquire returns the module a call of the tool runs on, counted as
// running (on the module, and in calls until the call calls done), or
// nil when the tool is not listed or the set is closed.
func (s *ToolSet) acquire(name string) *module {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.modules[name]; m != nil && !s.closed && m.acquire() {
		s.calls.Add(1)
		return m
	}
	return nil
}

// errRemoved is the error of a call of a tool dropped meanwhile.
func errRemoved(name string) error {
	return toolgate.Errorf(toolgate.EToolNotFound, "the sandboxed tool %s was removed", name)
}

// Running is how many calls have their room (a slot and their memory)
// and run now; calls waiting for room are not counted.
func (s *ToolSet) Running() int { return int(s.room.running.Load()) }

// MemoryFrees is how many times the set has given the heap its calls
// grew back to the operating system.
func (s *ToolSet) MemoryFrees() int { return int(s.room.freer.freed.Load()) }

// isHidden reports whether a directory entry is left alone (".cache").
func isHidden(name string) bool { return strings.HasPrefix(name, ".") }
