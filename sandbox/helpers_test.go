package sandbox_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testlog"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
)

// spec is a NAME.json for the tests: a description and an object schema.
const spec = `{"description": "a test module", "parameters": {"type": "object"}}`

// testSet is a tool set over a temporary directory, scanned by the test
// (no polling) unless configure sets Poll.
type testSet struct {
	*sandbox.ToolSet
	dir     string
	scratch string
	log     *testlog.LockedBuffer
}

// openSet opens a tool set over a new directory holding the modules
// install puts there first.
func openSet(t *testing.T, configure func(*sandbox.Options), install func(dir string)) *testSet {
	t.Helper()
	dir, scratch := t.TempDir(), t.TempDir()
	if install != nil {
		install(dir)
	}
	log := &testlog.LockedBuffer{}
	opts := sandbox.Options{
		Dir:        dir,
		CacheDir:   sandboxtest.CacheDir(),
		ScratchDir: scratch,
		Poll:       -1,
		Log:        slog.New(slog.NewTextHandler(log, nil)),
	}
	if configure != nil {
		configure(&opts)
	}
	set, err := sandbox.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return &testSet{ToolSet: set, dir: dir, scratch: scratch, log: log}
}

// tool returns the listed tool of that name, failing t without it.
func (s *testSet) tool(t *testing.T, name string) toolgate.Tool {
	t.Helper()
	for _, tool := range s.Tools() {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("tool %s is not listed; the log says:\n%s", name, s.log.String())
	return nil
}

// names lists the tools' names.
func (s *testSet) names() []string {
	var out []string
	for _, tool := range s.Tools() {
		out = append(out, tool.Name())
	}
	return out
}

// call runs the tool with args within timeout.
func (s *testSet) call(t *testing.T, name, args string, timeout time.Duration) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := s.tool(t, name).Execute(ctx, json.RawMessage(args))
	return res.Output, err
}

// toolError returns err as a *toolgate.Error of that code, failing t
// otherwise.
func toolError(t *testing.T, err error, code string) *toolgate.Error {
	t.Helper()
	te, ok := err.(*toolgate.Error)
	if !ok || te.Code != code {
		t.Fatalf("error %v (%T); want a %s", err, err, code)
	}
	return te
}

// decode decodes a JSON output, failing t when it is not JSON.
func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("output %s: %v", raw, err)
	}
	return v
}

// emptyDir fails t unless dir is empty.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Fatalf("%s holds %d entries (%s…); want none", dir, len(entries), entries[0].Name())
	}
}
