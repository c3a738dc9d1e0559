package mcpimport

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestEventBoundedBody: events within the bound pass whole (lines ending
// in \n or \r\n, comments); one over it is dropped on a stream that
// answers no call, and ends a call's stream with the answer in its place.
func TestEventBoundedBody(t *testing.T) {
	const max = 64
	small1 := "id: 1\ndata: {\"a\":1}\n\n"
	comment := ": keep-alive\r\n\r\n"
	big := "data: " + strings.Repeat("x", 3*max) + "\n" + "data: more\n\n"
	small2 := "event: message\ndata: {\"b\":2}\n\n"
	stream := small1 + comment + big + small2
	read := func(answer func() []byte) string {
		var log bytes.Buffer
		body := io.NopCloser(strings.NewReader(stream))
		b := &eventBoundedBody{body: body, r: bufio.NewReaderSize(strings.NewReader(stream), 16), max: max, answer: answer, log: slog.New(slog.NewTextHandler(&log, nil))}
		got, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	if got, want := read(nil), small1+comment+small2; got != want {
		t.Errorf("without a call: %q, want %q", got, want)
	}
	answer := "data: too large\n\n"
	if got, want := read(func() []byte { return []byte(answer) }), small1+comment+answer; got != want {
		t.Errorf("a call's stream: %q, want %q", got, want)
	}
}
