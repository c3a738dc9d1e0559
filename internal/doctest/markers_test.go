package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A marker names a test as a package directory and a test function
// ("internal/doctest TestReadmeExamples", "server TestReadme") or an e2e
// test file ("web/e2e/browser/cross-origin.test.mjs").
var (
	goTestRef  = regexp.MustCompile(`(?:^|\s)([a-z][a-z0-9/_-]*) (Test[A-Za-z0-9_]+)`)
	e2eTestRef = regexp.MustCompile(`\b(web/e2e/[A-Za-z0-9_/.-]+\.mjs)\b`)
)

// testExists reports whether a _test.go file of dir (relative to the
// module root) declares a function whose name starts with name.
func testExists(t *testing.T, dir, name string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(moduleRoot(t), dir, "*_test.go"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "\nfunc "+name) {
			return true
		}
	}
	return false
}

// checkMarker returns what is wrong with the marker of a block that is not
// fenced as text: it must say which test runs the block, or that it is not
// run and why, and every test it names must exist.
func checkMarker(t *testing.T, b block) string {
	t.Helper()
	switch {
	case b.marker == "":
		return "has no <!-- test: … --> or <!-- not run: … --> comment on the line above (fence output as ```text)"
	case !strings.Contains(b.marker, "test:") && !strings.Contains(b.marker, "not run:"):
		return "has a comment above it that says neither \"test:\" nor \"not run:\""
	}
	refs := 0
	for _, m := range goTestRef.FindAllStringSubmatch(b.marker, -1) {
		if st, err := os.Stat(filepath.Join(moduleRoot(t), m[1])); err != nil || !st.IsDir() {
			continue // words before a test's name that are no directory
		}
		refs++
		if !testExists(t, m[1], m[2]) {
			return "names " + m[1] + " " + m[2] + ", which is no test there"
		}
	}
	for _, m := range e2eTestRef.FindAllStringSubmatch(b.marker, -1) {
		refs++
		if _, err := os.Stat(filepath.Join(moduleRoot(t), m[1])); err != nil {
			return "names " + m[1] + ", which does not exist"
		}
	}
	if strings.Contains(b.marker, "test:") && refs == 0 {
		return "says \"test:\" but names no test (a package directory and a Test function, or a web/e2e file)"
	}
	return ""
}

// shellLangs are the fences of commands a reader pastes into a shell.
var shellLangs = []string{"sh", "bash", "shell", "console"}

// TestEveryBlockIsMarked: every fenced block of README.md and docs/guides,
// and every shell block of the other docs, is output (```text) or says, in
// the comment right above it, which test runs it or why none does; the
// tests it names exist. (The other docs' JSON and bare blocks are wire
// samples and output.)
func TestEveryBlockIsMarked(t *testing.T) {
	newcomer := map[string]bool{}
	for _, f := range newcomerDocs(t) {
		newcomer[f] = true
	}
	run, notRun := 0, 0
	for _, file := range docFiles(t) {
		for _, b := range parseBlocks(file, readDoc(t, file)) {
			if b.lang == "text" || !newcomer[file] && !slices.Contains(shellLangs, b.lang) {
				continue
			}
			if problem := checkMarker(t, b); problem != "" {
				t.Errorf("%s:%d: the ```%s block %s", b.file, b.line, b.lang, problem)
				continue
			}
			if strings.Contains(b.marker, "test:") {
				run++
			} else {
				notRun++
			}
		}
	}
	t.Logf("%d blocks run by a test, %d marked not run", run, notRun)
}

// TestMarkerCheckCatches: the marker check refuses what it is there to refuse.
func TestMarkerCheckCatches(t *testing.T) {
	for _, c := range []struct{ marker, want string }{
		{"", "has no"},
		{"<!-- a comment -->", "neither"},
		{"<!-- test: it is tested somewhere -->", "names no test"},
		{"<!-- test: internal/doctest TestNoSuchTest runs it -->", "no test there"},
		{"<!-- test: web/e2e/browser/no-such.test.mjs runs it -->", "does not exist"},
	} {
		if got := checkMarker(t, block{lang: "sh", marker: c.marker}); !strings.Contains(got, c.want) {
			t.Errorf("marker %q: %q, want it to say %q", c.marker, got, c.want)
		}
	}
	if got := checkMarker(t, block{lang: "sh", marker: "<!-- test: internal/doctest TestEveryBlockIsMarked -->"}); got != "" {
		t.Errorf("a good marker: %q", got)
	}
}

// TestGuideBlocksMatchReadme: a guide's block whose marker says it is
// README.md's is the README's block, word for word, so that the README's
// test covers it.
func TestGuideBlocksMatchReadme(t *testing.T) {
	readme := map[string]bool{}
	for _, b := range parseBlocks("README.md", readDoc(t, "README.md")) {
		readme[b.text] = true
	}
	n := 0
	for _, file := range newcomerDocs(t)[1:] {
		for _, b := range parseBlocks(file, readDoc(t, file)) {
			if !strings.Contains(b.marker, "README.md's") {
				continue
			}
			n++
			if !readme[b.text] {
				t.Errorf("%s:%d: the block says it is README.md's, but README.md has no such block:\n%s", b.file, b.line, b.text)
			}
		}
	}
	if n == 0 {
		t.Fatal("no guide block says it is README.md's")
	}
}
