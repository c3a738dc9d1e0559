package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/mobile"
)

// Limits on what a folder tool may print.
const (
	maxScriptStdout = 8 << 20
	maxScriptStderr = 64 << 10
)

// toolSpecFile is NAME.json beside an executable: the tool's description,
// parameters and traits.
type toolSpecFile struct {
	Description      string          `json:"description"`
	Parameters       json.RawMessage `json:"parameters"`
	TimeoutMS        int64           `json:"timeout_ms"`
	RequiresApproval string          `json:"requires_approval"`
	RateLimit        *struct {
		RequestsPerMinute int64 `json:"requests_per_minute"`
		RequestsPerHour   int64 `json:"requests_per_hour"`
	} `json:"rate_limit"`
	ReadOnly bool `json:"read_only"`
}

// folderTool is one tool found in the folder.
type folderTool struct {
	executable string
	spec       []byte // NAME.json as read, to notice changes
}

// toolFolder keeps a client's tools in step with a folder: every
// executable NAME (or NAME.ext) with NAME.json beside it is the tool NAME.
type toolFolder struct {
	dir    string
	client *mobile.Client
	known  map[string]folderTool
	broken map[string]string // name -> the last problem logged, to log it once
	log    *slog.Logger
}

func newToolFolder(dir string, client *mobile.Client, log *slog.Logger) *toolFolder {
	return &toolFolder{dir: dir, client: client, known: map[string]folderTool{}, broken: map[string]string{}, log: log}
}

// scan registers tools added or changed since the last scan and
// unregisters removed ones.
func (f *toolFolder) scan() {
	found, problems := findFolderTools(f.dir)
	for name, problem := range problems {
		if f.broken[name] != problem {
			f.log.Warn("toolgate connect: tool left out", "tool", name, "reason", problem)
		}
	}
	f.broken = problems
	for name, tool := range found {
		if old, ok := f.known[name]; ok && old.executable == tool.executable && bytes.Equal(old.spec, tool.spec) {
			continue
		}
		// Known even when refused, so it is not sent again until its
		// files change, and is unregistered if it is removed.
		f.known[name] = tool
		if err := f.register(name, tool); err != nil {
			f.log.Warn("toolgate connect: tool left out", "tool", name, "reason", err)
			continue
		}
		f.log.Info("toolgate connect: tool offered", "tool", name, "executable", tool.executable)
	}
	for name := range f.known {
		if _, still := found[name]; still {
			continue
		}
		delete(f.known, name)
		if err := f.client.UnregisterTool(name); err != nil {
			f.log.Warn("toolgate connect: removing a tool", "tool", name, "error", err)
		}
		f.log.Info("toolgate connect: tool removed", "tool", name)
	}
}

// register offers one tool with its script handler.
func (f *toolFolder) register(name string, tool folderTool) error {
	var spec toolSpecFile
	if err := json.Unmarshal(tool.spec, &spec); err != nil {
		return fmt.Errorf("%s.json: %w", name, err)
	}
	opts := mobile.NewToolOptions()
	opts.TimeoutMS = spec.TimeoutMS
	opts.RequiresApproval = spec.RequiresApproval
	opts.ReadOnly = spec.ReadOnly
	if spec.RateLimit != nil {
		opts.RequestsPerMinute = spec.RateLimit.RequestsPerMinute
		opts.RequestsPerHour = spec.RateLimit.RequestsPerHour
	}
	f.client.SetToolHandler(name, &scriptHandler{executable: tool.executable, dir: f.dir})
	if err := f.client.RegisterToolWithOptions(name, spec.Description, string(spec.Parameters), opts); err != nil {
		f.client.SetToolHandler(name, nil)
		return err
	}
	return nil
}

// findFolderTools lists the folder's tools, and why other candidates
// (a NAME.json without an executable, several executables for one name)
// are not tools.
func findFolderTools(dir string) (map[string]folderTool, map[string]string) {
	found, problems := map[string]folderTool{}, map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		problems["*"] = err.Error()
		return found, problems
	}
	executables := map[string][]string{}
	var specs []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if strings.HasSuffix(name, ".json") {
			specs = append(specs, strings.TrimSuffix(name, ".json"))
			continue
		}
		info, err := os.Stat(filepath.Join(dir, name)) // follows symlinks
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			continue
		}
		base := strings.TrimSuffix(name, filepath.Ext(name))
		executables[base] = append(executables[base], name)
	}
	for _, name := range specs {
		exes := executables[name]
		sort.Strings(exes)
		switch {
		case len(exes) == 0:
			problems[name] = fmt.Sprintf("%s.json has no executable %s or %s.* beside it", name, name, name)
			continue
		case len(exes) > 1:
			problems[name] = fmt.Sprintf("several executables for %s: %s", name, strings.Join(exes, ", "))
			continue
		}
		spec, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if err != nil {
			problems[name] = err.Error()
			continue
		}
		abs, err := filepath.Abs(filepath.Join(dir, exes[0]))
		if err != nil {
			problems[name] = err.Error()
			continue
		}
		found[name] = folderTool{executable: abs, spec: spec}
	}
	return found, problems
}

// scriptHandler runs a folder tool's executable: the arguments as JSON on
// standard input, the output read from standard output (JSON, or text as a
// string), a non-zero exit a tool_error with its standard error.
type scriptHandler struct {
	executable string
	dir        string
}

// HandleCall runs the executable once; a cancelled call kills it.
func (h *scriptHandler) HandleCall(call *mobile.Call) (string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if call.WaitCancelled(-1) {
			cancel()
		}
	}()
	cmd := exec.CommandContext(ctx, h.executable)
	cmd.Dir = h.dir
	cmd.Stdin = strings.NewReader(call.ArgsJSON())
	cmd.Env = append(os.Environ(), "TOOLGATE_CALL_ID="+call.ID(), "TOOLGATE_TOOL="+call.ToolName())
	stdout := &cappedBuffer{limit: maxScriptStdout}
	stderr := &cappedBuffer{limit: maxScriptStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if call.Cancelled() {
		return "", mobile.NewToolError(mobile.CodeInternalError, "cancelled: "+call.CancelReason(), "")
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		message := strings.TrimSpace(stderr.String())
		if message == "" {
			message = fmt.Sprintf("%s exited with status %d", filepath.Base(h.executable), exitErr.ExitCode())
		}
		details, _ := json.Marshal(map[string]any{"exit_code": exitErr.ExitCode(), "stderr": stderr.String()})
		return "", mobile.NewToolError(mobile.CodeInternalError, message, string(details))
	} else if err != nil {
		return "", mobile.NewToolError(mobile.CodeInternalError, "running "+filepath.Base(h.executable)+": "+err.Error(), "")
	}
	if stdout.truncated {
		return "", mobile.NewToolError(mobile.CodeInternalError, fmt.Sprintf("the tool printed more than %d bytes", maxScriptStdout), "")
	}
	return strings.TrimRight(stdout.String(), "\r\n"), nil
}

// cappedBuffer keeps the first limit bytes written and notes the rest.
type cappedBuffer struct {
	bytes.Buffer
	limit     int
	truncated bool
}

// Write keeps what fits and drops the rest, never failing, so the child
// is not killed by a broken pipe.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
