package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate"
)

// fingerprint tells whether a tool's files changed: the name, size and
// modification time of NAME.wasm and NAME.json.
type fingerprint struct {
	wasmSize, specSize   int64
	wasmMTime, specMTime time.Time
}

// candidate is a NAME.wasm with NAME.json beside it.
type candidate struct {
	name  string
	files fingerprint
}

// Scan brings the listed tools in step with the directory: new and
// changed tools are loaded (compiled), removed ones dropped, and the
// watchers told when anything changed. The watcher calls it every Poll;
// a test calls it to see a change at once.
func (s *ToolSet) Scan() {
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	found, err := s.candidates()
	if err != nil {
		s.opts.Log.Error("sandbox: cannot read the directory; its tools stay as they were", "dir", s.opts.Dir, "err", err)
		return
	}
	changed := false
	seen := map[string]bool{}
	for _, c := range found {
		seen[c.name] = true
		s.mu.Lock()
		current := s.modules[c.name]
		s.mu.Unlock()
		if current != nil && current.files == c.files {
			continue
		}
		if f, ok := s.failed[c.name]; ok && f.files == c.files {
			continue // logged already; tried again when its files change
		}
		m, err := s.load(c)
		if s.life.Err() != nil { // closed meanwhile: the compile was cancelled
			if m != nil {
				m.retire()
			}
			return
		}
		if err != nil {
			s.fail(c, err.Error())
			if current != nil {
				s.drop(c.name, "its new version cannot be used")
				changed = true
			}
			continue
		}
		delete(s.failed, c.name)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			m.retire()
			return
		}
		s.modules[c.name] = m
		s.mu.Unlock()
		if current != nil {
			current.retire()
			s.opts.Log.Info("sandbox: tool reloaded", "tool", c.name, "memory_limit_mb", m.config.memoryBytes>>20, "instance_kib", m.instanceBytes>>10)
		} else {
			s.opts.Log.Info("sandbox: tool listed", "tool", c.name, "memory_limit_mb", m.config.memoryBytes>>20, "instance_kib", m.instanceBytes>>10)
		}
		changed = true
	}
	s.mu.Lock()
	var gone []string
	for name := range s.modules {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	s.mu.Unlock()
	for _, name := range gone {
		s.drop(name, "its files were removed")
		changed = true
	}
	for name := range s.failed {
		if !seen[name] {
			delete(s.failed, name)
		}
	}
	if changed {
		s.rebuildTools()
		s.changed()
	}
}

// candidates lists the directory's NAME.wasm files with NAME.json beside
// them, sorted by name, at most MaxTools (the rest logged once).
func (s *ToolSet) candidates() ([]candidate, error) {
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return nil, err
	}
	var found []candidate
	for _, e := range entries {
		file := e.Name()
		name, ok := strings.CutSuffix(file, ".wasm")
		if !ok || isHidden(file) {
			continue
		}
		wasm, werr := os.Stat(filepath.Join(s.opts.Dir, file)) // follows a symbolic link
		spec, serr := os.Stat(filepath.Join(s.opts.Dir, name+".json"))
		c := candidate{name: name}
		switch {
		case werr != nil || !wasm.Mode().IsRegular():
			continue
		case serr != nil:
			s.fail(c, fmt.Sprintf("%s.wasm has no %s.json beside it (its description and parameters)", name, name))
			continue
		}
		c.files = fingerprint{wasmSize: wasm.Size(), wasmMTime: wasm.ModTime(), specSize: spec.Size(), specMTime: spec.ModTime()}
		found = append(found, c)
	}
	slices.SortFunc(found, func(a, b candidate) int { return strings.Compare(a.name, b.name) })
	if len(found) > s.opts.MaxTools {
		for _, c := range found[s.opts.MaxTools:] {
			s.fail(c, fmt.Sprintf("more than %d tools in the directory", s.opts.MaxTools))
		}
		found = found[:s.opts.MaxTools]
	}
	return found, nil
}

// load reads, checks and compiles one tool.
func (s *ToolSet) load(c candidate) (*module, error) {
	if !toolgate.ToolNamePattern.MatchString(c.name) {
		return nil, fmt.Errorf("%q is not a tool name: it must match %s", c.name, toolgate.ToolNamePattern)
	}
	specRaw, err := readCapped(filepath.Join(s.opts.Dir, c.name+".json"), maxSpecFileBytes)
	if err != nil {
		return nil, err
	}
	cfg, err := parseSpecFile(c.name, specRaw)
	if err != nil {
		return nil, err
	}
	if mb := int64(cfg.memoryBytes >> 20); weightMB(mb) > s.opts.MemoryBudgetMB {
		return nil, fmt.Errorf("%s.json: memory_limit_mb %d, with %d MiB for its call stack, is above the memory budget of all sandboxed calls (%d MiB)", c.name, mb, StackReserveMB, s.opts.MemoryBudgetMB)
	}
	if s.opts.Admit != nil {
		if err := s.opts.Admit(c.name); err != nil {
			reason := err.Error()
			if te, ok := err.(*toolgate.Error); ok {
				reason = te.Message
			}
			return nil, fmt.Errorf("the name %s cannot be used: %s", c.name, reason)
		}
	}
	wasm, err := readCapped(filepath.Join(s.opts.Dir, c.name+".wasm"), MaxModuleBytes)
	if err != nil {
		return nil, err
	}
	return compileModule(s.life, s.runtime, c.name, wasm, cfg, c.files)
}

// readCapped reads a file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", filepath.Base(path), limit)
	}
	return b, nil
}

// fail notes why a tool is not listed, logging it when that is new.
func (s *ToolSet) fail(c candidate, reason string) {
	if f, ok := s.failed[c.name]; ok && f.reason == reason {
		s.failed[c.name] = failure{files: c.files, reason: reason}
		return
	}
	s.failed[c.name] = failure{files: c.files, reason: reason}
	s.opts.Log.Warn("sandbox: tool not listed", "tool", c.name, "reason", reason)
}

// drop stops listing a tool; its module is freed after its running calls.
func (s *ToolSet) drop(name, why string) {
	s.mu.Lock()
	m := s.modules[name]
	delete(s.modules, name)
	s.mu.Unlock()
	if m != nil {
		m.retire()
		s.opts.Log.Info("sandbox: tool dropped", "tool", name, "reason", why)
	}
}

// rebuildTools remakes the sorted list of tools from the modules.
func (s *ToolSet) rebuildTools() {
	s.mu.Lock()
	defer s.mu.Unlock()
	tools := make([]toolgate.Tool, 0, len(s.modules))
	for _, m := range s.modules {
		tools = append(tools, &Tool{set: s, name: m.name, config: m.config})
	}
	slices.SortFunc(tools, func(a, b toolgate.Tool) int { return strings.Compare(a.Name(), b.Name()) })
	s.tools = tools
}
