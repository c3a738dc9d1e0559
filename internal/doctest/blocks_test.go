package doctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// block is one fenced block of a Markdown file.
type block struct {
	file   string // relative to the module root
	line   int    // of the opening fence, from 1
	lang   string // the fence's info string: "sh", "go", "text", …
	marker string // the HTML comment on the line right above the fence, "" when none
	text   string // the lines between the fences
}

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

// moduleRoot returns the directory of toolgate's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	rootOnce.Do(func() {
		var out []byte
		out, rootErr = exec.Command("go", "env", "GOMOD").Output()
		root = filepath.Dir(strings.TrimSpace(string(out)))
	})
	if rootErr != nil {
		t.Fatalf("go env GOMOD: %v", rootErr)
	}
	return root
}

// readDoc returns the text of a file relative to the module root.
func readDoc(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// parseBlocks returns the fenced blocks of the Markdown text of file.
func parseBlocks(file, text string) []block {
	lines := strings.Split(text, "\n")
	var blocks []block
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		b := block{file: file, line: i + 1, lang: strings.TrimSpace(lang)}
		if i > 0 && strings.HasPrefix(lines[i-1], "<!--") {
			b.marker = lines[i-1]
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		b.text = strings.Join(body, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

// newcomerDocs returns README.md and the guides, relative to the module root:
// the docs whose blocks a reader pastes.
func newcomerDocs(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join(moduleRoot(t), "docs", "guides", "*.md"))
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guides in docs/guides (%v)", err)
	}
	files := []string{"README.md"}
	for _, g := range guides {
		files = append(files, filepath.Join("docs", "guides", filepath.Base(g)))
	}
	return files
}

// markedBlock returns the one block of file whose marker holds the text and
// is fenced as lang.
func markedBlock(t *testing.T, file, marker, lang string) string {
	t.Helper()
	var found []block
	for _, b := range parseBlocks(file, readDoc(t, file)) {
		if strings.Contains(b.marker, marker) && b.lang == lang {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s has %d %s blocks marked %q, want 1", file, len(found), lang, marker)
	}
	return found[0].text
}
