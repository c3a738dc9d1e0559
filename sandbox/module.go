package sandbox

import (
	"context"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// module is one version of a tool: its checked NAME.json and its module
// compiled in the set's runtime. A changed file gives a new module; the
// old one is retired and its compiled code freed once the calls running
// on it have ended.
type module struct {
	name     string
	config   toolConfig
	files    fingerprint
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	// instanceBytes is what an instance holds on the gateway's heap
	// besides its linear memory (tables at their maximum, globals…),
	// counted against the tool's memory limit.
	instanceBytes uint64

	mu      sync.Mutex
	running int  // calls running on it
	retired bool // replaced or removed: no new call starts on it
}

// newRuntime returns the runtime every tool's module runs in: with
// WASI preview 1 and nothing else to import, interrupted when a call's
// context ends, its memories capped at MaxMemoryLimitMB (a call's own,
// lower, limit is callMemory's).
func newRuntime(ctx context.Context, cache wazero.CompilationCache) (wazero.Runtime, error) {
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(MaxMemoryLimitMB << 20 / wasmPageBytes)
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("sandbox: set up WASI: %w", err)
	}
	return r, nil
}

// compileModule compiles a tool's module. It must be a WASI preview 1
// command (it exports _start and its memory) importing nothing but WASI
// preview 1, so that no other host function can reach out, and what an
// instance holds at the start (its memory's initial size, its tables at
// their maximum, its globals…) must fit the tool's memory limit. A table
// with no maximum is given one, its minimum (shapeModule).
func compileModule(ctx context.Context, r wazero.Runtime, name string, wasm []byte, cfg toolConfig, files fingerprint) (*module, error) {
	shape, err := shapeModule(wasm)
	if err != nil {
		return nil, fmt.Errorf("%s.wasm does not compile: %w", name, err)
	}
	compiled, err := r.CompileModule(ctx, shape.wasm)
	if err != nil {
		return nil, fmt.Errorf("%s.wasm does not compile: %w", name, err)
	}
	if err := checkCommand(name, compiled, cfg, shape.instanceBytes); err != nil {
		_ = compiled.Close(ctx)
		return nil, err
	}
	return &module{name: name, config: cfg, files: files, runtime: r, compiled: compiled, instanceBytes: shape.instanceBytes}, nil
}

// checkCommand refuses a module that is not a WASI preview 1 command, or
// whose memory at the start and instanceBytes together are above the
// tool's limit.
func checkCommand(name string, compiled wazero.CompiledModule, cfg toolConfig, instanceBytes uint64) error {
	if _, ok := compiled.ExportedFunctions()["_start"]; !ok {
		return fmt.Errorf("%s.wasm exports no _start function: it is not a WASI command (build it with GOOS=wasip1 GOARCH=wasm go build, or for wasm32-wasip1)", name)
	}
	for _, f := range compiled.ImportedFunctions() {
		if mod, fn, _ := f.Import(); mod != wasi_snapshot_preview1.ModuleName {
			return fmt.Errorf("%s.wasm imports %s.%s; a sandboxed tool may import WASI preview 1 (%s) only", name, mod, fn, wasi_snapshot_preview1.ModuleName)
		}
	}
	if len(compiled.ImportedMemories()) > 0 {
		return fmt.Errorf("%s.wasm imports its memory; a sandboxed tool must define its own", name)
	}
	memories := compiled.ExportedMemories()
	if len(memories) == 0 {
		return fmt.Errorf("%s.wasm exports no memory: it is not a WASI command", name)
	}
	var start uint64
	for _, m := range memories {
		start += uint64(m.Min()) * wasmPageBytes
	}
	if start+instanceBytes > cfg.memoryBytes {
		return fmt.Errorf("%s.wasm needs %s of memory to start and %s for its tables, globals and other structures, above its limit of %d MiB (memory_limit_mb in %s.json)",
			name, sizeText(start), sizeText(instanceBytes), cfg.memoryBytes>>20, name)
	}
	return nil
}

// sizeText is n bytes in MiB, or KiB when under one MiB.
func sizeText(n uint64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// acquire counts a call starting on the module; false when it is retired.
func (m *module) acquire() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.retired {
		return false
	}
	m.running++
	return true
}

// release counts a call's end, freeing a retired module's compiled code
// after its last call.
func (m *module) release() {
	m.mu.Lock()
	m.running--
	last := m.retired && m.running == 0
	m.mu.Unlock()
	if last {
		m.close()
	}
}

// retire stops new calls on the module and frees its compiled code once
// no call runs on it.
func (m *module) retire() {
	m.mu.Lock()
	already := m.retired
	m.retired = true
	idle := m.running == 0
	m.mu.Unlock()
	if !already && idle {
		m.close()
	}
}

// close frees the compiled code.
func (m *module) close() { _ = m.compiled.Close(context.Background()) }
