package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// maxMethods bounds the methods of any one type of the package (exported
// and unexported, counted by receiver): a type past it owns too much, and
// its machinery belongs in a type of its own that it holds.
const maxMethods = 45

// No type of the store has more than maxMethods methods.
func TestMethodsPerType(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	count := map[string]int{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				count[receiverType(fn.Recv.List[0].Type)]++
			}
		}
	}
	if count["Store"] == 0 || count["Tx"] == 0 {
		t.Fatalf("counted %v: the store's types not found", count)
	}
	for typ, n := range count {
		if n > maxMethods {
			t.Errorf("%s has %d methods, more than %d", typ, n, maxMethods)
		}
	}
}

// receiverType is the name of a receiver's type: T for T, *T and T[P].
func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
