// Package layering holds tests of the directions imports may take between
// the packages of this module, so that a later change cannot quietly undo
// them. It has no code of its own.
package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// adapterModule is this module's path.
const adapterModule = "github.com/toolgate/toolgate"

// adapterNames are the adapters: packages that each connect the gateway to
// one outside thing (HTTP, MCP both ways, the sandbox, the model, the
// mobile SDK, the browser SDK's files). They share the root package's
// types and interfaces and import no other adapter, so that each can
// change, or be left out of a build, on its own.
var adapterNames = []string{"handlers", "mcpserve", "mcpimport", "sandbox", "agentloop", "mobile", "web"}

// adapterAllowed are the imports between adapters that are not a
// dependency of one on another's behaviour, with the reason.
var adapterAllowed = map[[2]string]string{
	{"handlers", "web"}: "handlers serves the browser SDK's files, which web embeds and which import nothing",
}

// adapterLightweight are the adapters an embedder may build with and that
// must not pull the model's SDK (github.com/openai/openai-go) in.
var adapterLightweight = []string{"sandbox", "mcpimport"}

// adapterPackage is what go list says of one package.
type adapterPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// adapterListModule lists every package of the module (tests left out)
// with its direct and transitive imports.
func adapterListModule(t *testing.T) map[string]adapterPackage {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the module's imports: %v", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(gobin, "list", "-json=ImportPath,Imports,Deps", adapterModule+"/...")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]adapterPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p adapterPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	for _, name := range append([]string{""}, adapterNames...) {
		if _, ok := pkgs[adapterPath(name)]; !ok {
			t.Fatalf("go list does not show %s: this test's list of packages is out of date", adapterPath(name))
		}
	}
	return pkgs
}

// adapterPath is the import path of the module's package name ("" for the
// root package).
func adapterPath(name string) string {
	if name == "" {
		return adapterModule
	}
	return adapterModule + "/" + name
}

// adapterOf returns the adapter whose tree holds the package at path
// (itself or one of its subpackages), "" for none.
func adapterOf(path string) string {
	for _, name := range adapterNames {
		p := adapterPath(name)
		if path == p || strings.HasPrefix(path, p+"/") {
			return name
		}
	}
	return ""
}

// TestAdaptersImportNoOtherAdapter: no adapter imports another adapter's
// package, directly or through any other package of the module; what
// they share lives in the root package (or in an internal package named
// for what it does).
func TestAdaptersImportNoOtherAdapter(t *testing.T) {
	pkgs := adapterListModule(t)
	for _, name := range adapterNames {
		p := pkgs[adapterPath(name)]
		for _, dep := range p.Deps {
			other := adapterOf(dep)
			if other == "" || other == name {
				continue
			}
			if _, ok := adapterAllowed[[2]string{name, other}]; ok {
				continue
			}
			t.Errorf("adapter %s imports %s (adapter %s)%s", name, dep, other, adapterVia(pkgs, p, dep))
		}
	}
}

// adapterVia names the package of the module through which p imports dep
// when it does not import it directly.
func adapterVia(pkgs map[string]adapterPackage, p adapterPackage, dep string) string {
	if slices.Contains(p.Imports, dep) {
		return ""
	}
	for _, imp := range p.Imports {
		if strings.HasPrefix(imp, adapterModule) && slices.Contains(pkgs[imp].Deps, dep) {
			return " through " + imp
		}
	}
	return ""
}

// TestLightweightAdaptersPullNoModelSDK: the sandbox and the MCP import
// share the Tool interfaces of the root package, not the agent's, so
// that they do not pull the model's SDK in.
func TestLightweightAdaptersPullNoModelSDK(t *testing.T) {
	pkgs := adapterListModule(t)
	for _, name := range adapterLightweight {
		for _, dep := range pkgs[adapterPath(name)].Deps {
			if strings.HasPrefix(dep, "github.com/openai/") {
				t.Errorf("%s imports %s (the model's SDK)", name, dep)
			}
		}
	}
}

// TestRootImportsNothingOfTheModule: the root package imports no package
// of this module, nor any outside the standard library, so every other
// package can import it without a cycle ever becoming possible.
func TestRootImportsNothingOfTheModule(t *testing.T) {
	pkgs := adapterListModule(t)
	for _, dep := range pkgs[adapterModule].Deps {
		first, _, _ := strings.Cut(dep, "/")
		if strings.Contains(first, ".") {
			t.Errorf("the root package imports %s, which is not in the standard library", dep)
		}
	}
}
