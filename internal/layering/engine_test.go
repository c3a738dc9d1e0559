package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// engineModule is this module's path.
const engineModule = "github.com/toolgate/toolgate"

// engineMayImport are the packages of the module the engine may import:
// the root package (the shared types and interfaces) and the store.
var engineMayImport = []string{engineModule, engineModule + "/store"}

// engineMaxMethods is the most methods one type may have, declared or
// promoted through embedded fields.
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

// engineMethodCounts counts the method set of each named type of the
// packages matching patterns, loaded in dir (tests left out), by
// "package.Type": for a struct or other concrete type that of *T (every
// method declared on T or *T, exported or not, and every method promoted
// through an embedded field, however deep), for an interface its
// methods, embedded interfaces' included. Embedding is how a type grows
// back past the limit unseen (a struct of embedded parts has their
// methods all the same), so what counts is what a caller can call. Only
// the methods declared in the loaded packages count: a type that embeds
// one from elsewhere (toolgate.Time, a time.Time with its own JSON form)
// is not where this module's features are added.
func engineMethodCounts(dir string, patterns ...string) (map[string]int, error) {
	cfg := &packages.Config{Dir: dir, Mode: packages.NeedName | packages.NeedTypes}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	loaded := map[*types.Package]bool{}
	for _, p := range pkgs {
		loaded[p.Types] = true
	}
	counts := map[string]int{}
	var problems []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			problems = append(problems, e.Error())
		}
		if p.Types == nil {
			continue
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			tn, ok := scope.Lookup(name).(*types.TypeName)
			if !ok || tn.IsAlias() {
				continue
			}
			t := tn.Type()
			var ms *types.MethodSet
			if types.IsInterface(t) {
				ms = types.NewMethodSet(t)
			} else {
				ms = types.NewMethodSet(types.NewPointer(t))
			}
			n := 0
			for sel := range ms.Methods() {
				if loaded[sel.Obj().Pkg()] {
					n++
				}
			}
			if n > 0 {
				counts[p.Name+"."+name] = max(counts[p.Name+"."+name], n)
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("loading the packages: %s", strings.Join(problems, "; "))
	}
	return counts, nil
}

// engineOverLimit returns the types of counts over the limit that are not
// exempt.
func engineOverLimit(counts map[string]int) []string {
	var over []string
	for typ, n := range counts {
		if n > engineMaxMethods && engineOverMethods[typ] == "" {
			over = append(over, fmt.Sprintf("%s has %d methods (its own and those promoted through embedded fields), more than %d: split it by concern, and hold the parts as named fields", typ, n, engineMaxMethods))
		}
	}
	slices.Sort(over)
	return over
}

// TestNoTypeOverTheMethodLimit: no type of the module has more than
// engineMaxMethods methods, exported or not, declared or promoted through
// embedded fields, so that no type becomes the place every feature is
// added to.
func TestNoTypeOverTheMethodLimit(t *testing.T) {
	counts, err := engineMethodCounts(engineModuleRoot(t), "./...")
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) < 50 {
		t.Fatalf("counted the methods of %d types only: the load missed the module", len(counts))
	}
	for _, problem := range engineOverLimit(counts) {
		t.Error(problem)
	}
}

// TestMethodLimitCheckFails: the count sees methods on pointer and
// generic receivers, methods promoted through embedded fields (of
// embedded fields), and interfaces' methods; and the check reports the
// types over the limit, such as a struct that embeds parts each under it.
func TestMethodLimitCheckFails(t *testing.T) {
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("package big\n\nimport \"time\"\n\n// Stamp has time.Time's methods, not counted.\ntype Stamp struct{ time.Time }\n\ntype Big struct{}\n\ntype G[T any] struct{}\n\n")
	for i := range engineMaxMethods + 1 {
		fmt.Fprintf(&src, "func (b *Big) M%d() {}\n", i)
	}
	src.WriteString("func (g *G[T]) A() {}\nfunc (g G[T]) B() {}\n\n")
	// Union embeds two parts of 30 methods, one of them through another
	// embedded struct; Named holds the same parts by name.
	src.WriteString("type core struct{}\n\nfunc (c *core) shared() {}\n\n")
	src.WriteString("type PartA struct{ *core }\n\ntype PartB struct{ *core }\n\ntype inner struct{ *PartB }\n\n")
	src.WriteString("type Union struct {\n\t*PartA\n\tinner\n}\n\ntype Named struct {\n\tA *PartA\n\tB *PartB\n}\n\n")
	src.WriteString("type Iface interface {\n\tIA\n\tIB\n}\n\ntype IA interface{ X() }\n\ntype IB interface{ Y() }\n\n")
	for i := range 30 {
		fmt.Fprintf(&src, "func (p *PartA) A%d() {}\nfunc (p PartB) B%d() {}\n", i, i)
	}
	files := map[string]string{"go.mod": "module example.com/big\n\ngo 1.22\n", "big.go": src.String()}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := engineMethodCounts(dir, ".")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"big.Big": engineMaxMethods + 1, "big.G": 2, "big.PartA": 31, "big.PartB": 31,
		"big.Union": 61, "big.Iface": 2}
	for typ, n := range want {
		if counts[typ] != n {
			t.Errorf("%s: counted %d methods, want %d (all counts %v)", typ, counts[typ], n, counts)
		}
	}
	for _, typ := range []string{"big.Named", "big.Stamp"} {
		if n, ok := counts[typ]; ok {
			t.Errorf("%s: counted %d methods, want none (parts held by name; another module's methods)", typ, n)
		}
	}
	over := engineOverLimit(counts)
	if len(over) != 2 || !strings.Contains(over[0], "big.Big ") || !strings.Contains(over[1], "big.Union ") {
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
