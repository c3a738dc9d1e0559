package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#+ (.+)$`)
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// headingAnchor is the anchor GitHub gives a heading: lower case, spaces
// as hyphens, everything but letters, digits, hyphens and underscores left out.
func headingAnchor(heading string) string {
	return strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), ""), " ", "-")
}

// docFiles returns the Markdown files of the repository's docs, relative to
// the module root: the top level's and docs/'s, guides included.
func docFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.md", "docs/*.md", "docs/guides/*.md"} {
		found, err := filepath.Glob(filepath.Join(moduleRoot(t), pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			rel, _ := filepath.Rel(moduleRoot(t), f)
			files = append(files, rel)
		}
	}
	return files
}

// TestDocLinksResolve: every relative link of the docs names a file that
// exists and, after a #, a heading of that file.
func TestDocLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	for _, f := range docFiles(t) {
		anchors[f] = map[string]bool{}
		for _, m := range mdHeading.FindAllStringSubmatch(readDoc(t, f), -1) {
			anchors[f][headingAnchor(m[1])] = true
		}
	}
	for _, f := range docFiles(t) {
		for _, m := range mdLink.FindAllStringSubmatch(readDoc(t, f), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(f), path))
			}
			if _, err := os.Stat(filepath.Join(moduleRoot(t), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, link)
				continue
			}
			if known, ok := anchors[target]; ok && anchor != "" && !known[anchor] {
				t.Errorf("%s links to %s: %s has no such heading", f, link, target)
			}
		}
	}
}

// TestHeadingAnchor: anchors as GitHub makes them.
func TestHeadingAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Several sessions on one connection — `POST /v1/streams`, `POST /v1/poll`": "several-sessions-on-one-connection--post-v1streams-post-v1poll",
		"The agent loop: pointing toolgate at a model":                             "the-agent-loop-pointing-toolgate-at-a-model",
		"http_request":     "http_request",
		"HTTPS and HTTP/2": "https-and-http2",
	} {
		if got := headingAnchor(heading); got != want {
			t.Errorf("%q: %q, want %q", heading, got, want)
		}
	}
}
