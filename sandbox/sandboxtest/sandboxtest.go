// Package sandboxtest builds the WebAssembly modules the sandbox's tests
// run (sandbox/testdata/modules/NAME, each a Go command built with
// GOOS=wasip1 GOARCH=wasm) and installs them in a test's sandbox
// directory. It needs only the Go toolchain.
//
// The modules are built once per version of their sources and of Go, in
// a directory of the system's temporary directory named after a hash of
// both, so a test binary that runs again (or another package's) finds
// them built; wazero's compiled code is kept likewise (CacheDir).
package sandboxtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// base is the system's temporary directory when the test binary started
// (a test may change TMPDIR).
var base = os.TempDir()

var (
	buildOnce sync.Once
	builtDir  string
	buildErr  error
)

// CacheDir is the wazero compilation cache the tests share.
func CacheDir() string {
	return filepath.Join(base, "toolgate-sandboxtest-wazero-cache")
}

// Modules returns the directory holding NAME.wasm for every test module,
// building them first when needed; it fails t when they cannot be built.
func Modules(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { builtDir, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("build the test modules: %v", buildErr)
	}
	return builtDir
}

// Install copies the test module NAME into dir as tool (tool.wasm) with
// spec (a JSON text) as tool.json; an empty spec writes no tool.json.
func Install(t testing.TB, dir, module, tool, spec string) {
	t.Helper()
	src := filepath.Join(Modules(t), module+".wasm")
	if err := copyFile(src, filepath.Join(dir, tool+".wasm")); err != nil {
		t.Fatal(err)
	}
	if spec != "" {
		if err := os.WriteFile(filepath.Join(dir, tool+".json"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sourcesDir is sandbox/testdata/modules.
func sourcesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "modules")
}

// build builds every module into a directory named after the hash of the
// sources and the Go version, unless it exists.
func build() (string, error) {
	src := sourcesDir()
	hash, names, err := hashSources(src)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "toolgate-sandboxtest-"+hash)
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(base, "toolgate-sandboxtest-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the Go toolchain is needed to build the test modules: %w", err)
	}
	args := []string{"build", "-o", tmp + string(filepath.Separator)}
	for _, name := range names {
		args = append(args, "./testdata/modules/"+name)
	}
	cmd := exec.Command(goTool, args...)
	cmd.Dir = filepath.Join(src, "..", "..")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("GOOS=wasip1 GOARCH=wasm go %v: %v\n%s", args, err, out)
	}
	for _, name := range names {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(tmp, name+".wasm")); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "done"), nil, 0o644); err != nil {
		return "", err
	}
	// Another test binary may have built the same at the same time:
	// either directory is as good.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "done")); serr != nil {
			return "", err
		}
	}
	return dir, nil
}

// hashSources hashes the modules' sources and the Go version, and lists
// the modules.
func hashSources(src string) (string, []string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	var names []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel != "." && filepath.Dir(rel) == "." {
				names = append(names, rel)
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	slices.Sort(names)
	return hex.EncodeToString(h.Sum(nil))[:16], names, nil
}

// copyFile copies src to dst through a temporary file renamed into place,
// so a watcher never reads it half-written.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dst), ".install-*")
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(out.Name())
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(out.Name())
		return err
	}
	return os.Rename(out.Name(), dst)
}
