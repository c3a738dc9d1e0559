package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// engineModule is this module's path.
const engineModule = "github.com/toolgate/toolgate"

// engineMayImport are the packages of the module the engine may import:
// the root package (the shared types and interfaces) and the store.
var engineMayImport = []string{engineModule, engineModule + "/store"}

// engineMaxMethods is the most methods one type may declare.
const engineMaxMethods = 45

// engineOverMethods are the types allowed over engineMaxMethods for now,
// by package name and type name, with the reason. TEMPORARY: each is
// being, or is to be, brought under the limit; remove its entry then.
var engineOverMethods = map[string]string{
	// none now: every type of the module is within the limit
}

// enginePackage is what go list says of one package.
type enginePackage struct {
	ImportPath string
	Dir        string
	Imports    []string
}

// engineList lists the packages matching pattern (tests left out).
func engineList(t *testing.T, pattern string) []enginePackage {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the module's imports: %v", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(gobin, "list", "-json=ImportPath,Dir,Imports", pattern)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, stderr.Bytes())
	}
	var pkgs []enginePackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p enginePackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// engineImportProblems returns what the engine's packages import of the
// module beyond the root package and the store (and the temporary
// imports).
func engineImportProblems(pkgs []enginePackage) []string {
	var problems []string
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if imp != engineModule && !strings.HasPrefix(imp, engineModule+"/") {
				continue // the standard library, or another module
			}
			if slices.Contains(engineMayImport, imp) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s imports %s: the engine imports only the root package and the store", p.ImportPath, imp))
		}
	}
	return problems
}

// TestEngineImportsOnlyTheRootAndTheStore: the engine's core depends on
// the shared types and the store only; an adapter or the agent host it
// needs is an interface the engine declares and the process provides.
func TestEngineImportsOnlyTheRootAndTheStore(t *testing.T) {
	pkgs := engineList(t, engineModule+"/engine/...")
	if len(pkgs) == 0 {
		t.Fatal("go list found no engine package")
	}
	for _, problem := range engineImportProblems(pkgs) {
		t.Error(problem)
	}
}

// TestEngineImportCheckFails: the check catches an engine importing an
// adapter.
func TestEngineImportCheckFails(t *testing.T) {
	bad := []enginePackage{{ImportPath: engineModule + "/engine", Imports: []string{"context", engineModule, engineModule + "/mcpserve"}}}
	if got := engineImportProblems(bad); len(got) != 1 || !strings.Contains(got[0], "mcpserve") {
		t.Errorf("an engine importing mcpserve: problems %q", got)
	}
}

// engineMethodCounts counts the methods declared on each type of the
// package in dir (tests left out), by "package.Type".
func engineMethodCounts(dir string) (map[string]int, error) {
	fset := token.NewFileSet()
	counts := map[string]int{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			if typ := engineReceiverType(fn.Recv.List[0].Type); typ != "" {
				counts[f.Name.Name+"."+typ]++
			}
		}
	}
	return counts, nil
}

// engineReceiverType is the name of a receiver's type: T, *T, T[P], *T[P].
func engineReceiverType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// engineOverLimit returns the types of counts over the limit that are not
// exempt.
func engineOverLimit(counts map[string]int) []string {
	var over []string
	for typ, n := range counts {
		if n > engineMaxMethods && engineOverMethods[typ] == "" {
			over = append(over, fmt.Sprintf("%s declares %d methods, more than %d: split it by concern", typ, n, engineMaxMethods))
		}
	}
	slices.Sort(over)
	return over
}

// TestNoTypeOverTheMethodLimit: no type of the module declares more than
// engineMaxMethods methods, exported or not, so that no type becomes the
// place every feature is added to.
func TestNoTypeOverTheMethodLimit(t *testing.T) {
	root := engineModuleRoot(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
			return filepath.SkipDir
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		counts, err := engineMethodCounts(path)
		if err != nil {
			return err
		}
		checked += len(counts)
		for _, problem := range engineOverLimit(counts) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s (%s)", problem, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("counted the methods of %d types only: the walk missed the module", checked)
	}
}

// TestMethodLimitCheckFails: the count sees methods on pointer and
// generic receivers, and the check reports a type over the limit.
func TestMethodLimitCheckFails(t *testing.T) {
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("package big\n\ntype Big struct{}\n\ntype G[T any] struct{}\n\n")
	for i := range engineMaxMethods + 1 {
		fmt.Fprintf(&src, "func (b *Big) M%d() {}\n", i)
	}
	src.WriteString("func (g *G[T]) A() {}\nfunc (g G[T]) B() {}\n")
	if err := os.WriteFile(filepath.Join(dir, "big.go"), []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	counts, err := engineMethodCounts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if counts["big.Big"] != engineMaxMethods+1 || counts["big.G"] != 2 {
		t.Fatalf("counts %v", counts)
	}
	if over := engineOverLimit(counts); len(over) != 1 || !strings.Contains(over[0], "big.Big") {
		t.Errorf("over the limit: %q", over)
	}
}

// engineModuleRoot is the directory of this module's go.mod.
func engineModuleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		t.Fatal("not inside the module")
	}
	return filepath.Dir(mod)
}
