package doctest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxReadmeLines is how long README.md may grow: what toolgate is, the two
// commands, one example each for a page, an app and an agent, and links.
// The rest belongs in docs/guides.
const maxReadmeLines = 320

// TestReadmeLength keeps README.md short enough to be read first.
func TestReadmeLength(t *testing.T) {
	n := strings.Count(readDoc(t, "README.md"), "\n")
	if n > maxReadmeLines {
		t.Fatalf("README.md has %d lines, at most %d: move the detail to a guide in docs/guides", n, maxReadmeLines)
	}
}

// issueNumber finds a citation of an issue by its number: the word issue
// or issues followed by a number, or a number after "#".
var issueNumber = regexp.MustCompile(`(?i)\bissues? [0-9]|(^|[^&\w])#[0-9]`)

// skipDir reports whether a directory holds no docs or code of ours.
func skipDir(name string) bool {
	return name == ".git" || name == "node_modules" || name == "test-artifacts" || name == "testdata"
}

// TestNoIssueNumbers: no Markdown file and no string in the Go code cites an
// issue by its number (the docs say what is, the commit messages say why;
// a reader has no issue tracker to look numbers up in).
func TestNoIssueNumbers(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".md"):
			for i, line := range strings.Split(readDoc(t, rel), "\n") {
				if issueNumber.MatchString(line) {
					t.Errorf("%s:%d cites an issue number: %s", rel, i+1, line)
				}
			}
		case strings.HasSuffix(path, ".go"):
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && issueNumber.MatchString(s) {
					t.Errorf("%s cites an issue number in a string: %s", fset.Position(lit.Pos()), lit.Value)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIssueNumberPattern: the pattern finds the ways a number was cited and
// leaves alone what is not a citation.
func TestIssueNumberPattern(t *testing.T) {
	for _, s := range []string{"(issue " + "15)", "after issues " + "17 and 12", "Issue " + "14 put checks", "see #" + "12", "#" + "3 in the list"} {
		if !issueNumber.MatchString(s) {
			t.Errorf("%q is not found", s)
		}
	}
	for _, s := range []string{"an issue with 3 parts", "&#39;", "color: #fff", "a#1b", "issue tracker"} {
		if issueNumber.MatchString(s) {
			t.Errorf("%q is found", s)
		}
	}
}

// errorCodes returns the string constants error.go declares: the error codes.
func errorCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(moduleRoot(t), "error.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					code, _ := strconv.Unquote(lit.Value)
					codes = append(codes, code)
				}
			}
		}
	}
	if len(codes) < 20 {
		t.Fatalf("read %d codes from error.go, want them all: %v", len(codes), codes)
	}
	return codes
}

// TestErrorCodesDocumented: the Errors section of docs/PROTOCOL.md — the
// one place the codes are listed — names every code error.go declares, and
// its table of HTTP errors names no code error.go does not declare.
func TestErrorCodesDocumented(t *testing.T) {
	protocol := readDoc(t, "docs/PROTOCOL.md")
	_, section, ok := strings.Cut(protocol, "\n### Errors\n")
	if !ok {
		t.Fatal("docs/PROTOCOL.md has no ### Errors section")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	codes := errorCodes(t)
	for _, code := range codes {
		if !strings.Contains(section, "`"+code+"`") {
			t.Errorf("docs/PROTOCOL.md's Errors section does not list %s (declared in error.go)", code)
		}
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|")
	rows := row.FindAllStringSubmatch(section, -1)
	if len(rows) < 15 {
		t.Fatalf("read %d rows of the error table, want them all", len(rows))
	}
	for _, m := range rows {
		if !slices.Contains(codes, m[1]) {
			t.Errorf("docs/PROTOCOL.md's error table lists %s, which error.go does not declare", m[1])
		}
	}
}

// TestLayoutNamesEveryPackage: the layout table of docs/guides/contributing.md
// names every package of the module, and only packages of the module.
func TestLayoutNamesEveryPackage(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var packages []string
	for _, path := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(path, "github.com/toolgate/toolgate"), "/")
		if rel == "" {
			rel = "."
		}
		packages = append(packages, rel)
	}
	guide := readDoc(t, "docs/guides/contributing.md")
	_, layout, _ := strings.Cut(guide, "\n## Layout\n")
	layout, _, _ = strings.Cut(layout, "\n## ")
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)`").FindAllStringSubmatch(layout, -1) {
		listed = append(listed, m[1])
	}
	for _, p := range packages {
		if !slices.Contains(listed, p) {
			t.Errorf("the layout table of docs/guides/contributing.md does not name the package %s", p)
		}
	}
	for _, l := range listed {
		if !slices.Contains(packages, l) {
			t.Errorf("the layout table of docs/guides/contributing.md names %s, which is no package of the module", l)
		}
	}
}
