package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/server"
)

// TestMetadataOverTheLimitIsRefused: metadata larger than
// --max-metadata-bytes of compact JSON is refused with 413
// PAYLOAD_TOO_LARGE and no session is stored; metadata at the limit is
// accepted. (The finding: ~1 MiB of metadata per anonymous session was
// accepted and kept in memory.)
func TestMetadataOverTheLimitIsRefused(t *testing.T) {
	g := startGateway(t, nil)
	// ~1 MiB, under the default body limit with the rest of the body.
	huge := `{"blob":"` + strings.Repeat("x", 1<<20-200) + `"}`
	status, body := g.do("POST", "/v1/sessions", "", `{"client":{"name":"big"},"metadata":`+huge+`}`)
	if status != 413 || !strings.Contains(string(body), `"PAYLOAD_TOO_LARGE"`) {
		t.Fatalf("~1 MiB of metadata: status %d %s, want 413 PAYLOAD_TOO_LARGE", status, body)
	}
	if n := openSessions(g); n != 0 {
		t.Errorf("%d sessions open after a refused create, want 0", n)
	}

	// Exactly the default limit of compact JSON is accepted; the white
	// space of the text as sent does not count.
	limit := server.DefaultConfig().MaxMetadataBytes
	atLimit := `{"v":"` + strings.Repeat("y", limit-8) + `"}`
	if len(atLimit) != limit {
		t.Fatalf("test metadata is %d bytes, want %d", len(atLimit), limit)
	}
	spaced := strings.Replace(atLimit, `{"v":`, "{ \n  \"v\" :   ", 1)
	var s session
	g.call("POST", "/v1/sessions", "", `{"metadata":`+spaced+`}`, 201, &s)
	var view struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	g.call("GET", "/v1/sessions/"+s.ID, testAgentKey, nil, 200, &view)
	if string(view.Metadata) != atLimit {
		t.Errorf("stored metadata of %d bytes, want the %d sent (compacted)", len(view.Metadata), limit)
	}
	over := `{"v":"` + strings.Repeat("y", limit-7) + `"}`
	status, body = g.do("POST", "/v1/sessions", "", `{"metadata":`+over+`}`)
	if status != 413 || !strings.Contains(string(body), fmt.Sprint(limit)) {
		t.Errorf("metadata one byte over: status %d %s, want 413 naming the limit", status, body)
	}
	if n := openSessions(g); n != 1 {
		t.Errorf("%d sessions open, want 1", n)
	}
}

// TestMetadataLimitIsASetting: --max-metadata-bytes moves the limit.
func TestMetadataLimitIsASetting(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MaxMetadataBytes = 16 })
	g.call("POST", "/v1/sessions", "", `{"metadata":{"a":"01234567"}}`, 201, nil) // 16 bytes
	status, body := g.do("POST", "/v1/sessions", "", `{"metadata":{"a":"012345678"}}`)
	if status != 413 {
		t.Errorf("17 bytes of metadata with a limit of 16: status %d %s, want 413", status, body)
	}
}

// TestMetadataWithInvalidUTF8IsRefused: metadata whose text is not valid
// UTF-8 is refused with 400 and nothing is stored: decoding would read
// U+FFFD where the stored text keeps the bytes as sent.
func TestMetadataWithInvalidUTF8IsRefused(t *testing.T) {
	g := startGateway(t, nil)
	for _, bad := range []string{"\xff", "a\xc3(b", "\xed\xa0\x80"} {
		status, body := g.do("POST", "/v1/sessions", "", []byte(`{"metadata":{"name":"`+bad+`"}}`))
		if status != 400 || !strings.Contains(string(body), "UTF-8") {
			t.Errorf("metadata holding %q: status %d %s, want 400 naming UTF-8", bad, status, body)
		}
		status, body = g.do("POST", "/v1/sessions", "", []byte(`{"metadata":{"`+bad+`":1}}`))
		if status != 400 {
			t.Errorf("metadata with the name %q: status %d %s, want 400", bad, status, body)
		}
	}
	if n := openSessions(g); n != 0 {
		t.Errorf("%d sessions open after refused creates, want 0", n)
	}
	g.call("POST", "/v1/sessions", "", `{"metadata":{"name":"Zoë 🙂"}}`, 201, nil)
}

// openSessions counts the open sessions through GET /v1/sessions.
func openSessions(g *gateway) int {
	g.t.Helper()
	var list struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	g.call("GET", "/v1/sessions", testAgentKey, nil, 200, &list)
	return len(list.Sessions)
}
