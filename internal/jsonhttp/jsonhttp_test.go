package jsonhttp_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// writeError answers a request for path with WriteError(err), the
// request carrying a logger that writes to logs, and returns the reply
// with its decoded error body.
func writeError(t *testing.T, path string, err error, logs io.Writer) (*http.Response, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r = r.WithContext(jsonhttp.WithLogger(r.Context(), slog.New(slog.NewTextHandler(logs, nil))))
	w := httptest.NewRecorder()
	jsonhttp.WriteError(w, r, err)
	resp := w.Result()
	var body struct {
		Error map[string]any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("the reply is not JSON: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	return resp, body.Error
}

// TestWriteErrorGatewayError: a *toolgate.Error is written with its
// code's status, its message and details, and Retry-After when it has one;
// nothing is logged.
func TestWriteErrorGatewayError(t *testing.T) {
	var logs bytes.Buffer
	te := toolgate.Errorf(toolgate.ERateLimited, "slow down")
	te.RetryAfterSeconds = 7
	te.Details = map[string]any{"limit": 3}
	resp, body := writeError(t, "/", fmt.Errorf("wrapped: %w", te), &logs)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("status %d, want 429", resp.StatusCode)
	}
	if got := resp.Header.Get("Retry-After"); got != "7" {
		t.Errorf("Retry-After %q, want 7", got)
	}
	if body["code"] != toolgate.ERateLimited || body["message"] != "slow down" {
		t.Errorf("body %v", body)
	}
	if d, _ := body["details"].(map[string]any); d["limit"] != float64(3) {
		t.Errorf("details %v", body["details"])
	}
	if logs.String() != "" {
		t.Errorf("a gateway error was logged: %s", logs.String())
	}
}

// TestWriteErrorInternal: any other error is a 500 saying "Internal
// error." only, and is logged with what it was.
func TestWriteErrorInternal(t *testing.T) {
	var logs bytes.Buffer
	resp, body := writeError(t, "/some/path", errors.New("disk on fire at /var/secret"), &logs)
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", resp.StatusCode)
	}
	if body["code"] != toolgate.EInternal || body["message"] != "Internal error." {
		t.Errorf("body %v", body)
	}
	if got := logs.String(); !strings.Contains(got, "disk on fire") || !strings.Contains(got, "/some/path") {
		t.Errorf("the internal error was not logged with its path: %q", got)
	}
}

// TestStatusOf: every code a request can fail with has its own status;
// an unknown code is a 500.
func TestStatusOf(t *testing.T) {
	for code, want := range map[string]int{
		toolgate.EBadRequest:         400,
		toolgate.EUnauthenticated:    401,
		toolgate.EPermissionDenied:   403,
		toolgate.ENotFound:           404,
		toolgate.EToolNotFound:       404,
		toolgate.EConflict:           409,
		toolgate.ECallClosed:         409,
		toolgate.EPayloadTooLarge:    413,
		toolgate.EInvalidArgs:        422,
		toolgate.ERateLimited:        429,
		toolgate.ESessionOffline:     503,
		toolgate.EToolOffline:        503,
		toolgate.EStorageFull:        503,
		toolgate.EStorageUnavailable: 503,
		toolgate.EModelNotConfigured: 503,
		toolgate.ETimeout:            504,
		toolgate.EMisdirectedRequest: 421,
		"NO_SUCH_CODE":               500,
	} {
		if got := jsonhttp.StatusOf(code); got != want {
			t.Errorf("StatusOf(%s) = %d, want %d", code, got, want)
		}
	}
}

// TestBearer: the secret of an Authorization: Bearer header (the scheme in
// any case), nothing for another scheme, and access_token only when the
// query is allowed and no Authorization header is sent.
func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		name, header, query string
		allowQuery          bool
		want                string
	}{
		{"bearer", "Bearer k1", "", false, "k1"},
		{"scheme in any case, spaces trimmed", "bEaReR   k2 ", "", false, "k2"},
		{"another scheme", "Basic a2V5", "", true, ""},
		{"scheme alone", "Bearer ", "", false, ""},
		{"query not allowed", "", "k3", false, ""},
		{"query allowed", "", "k3", true, "k3"},
		{"header wins over query", "Bearer k4", "k3", true, "k4"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/?access_token="+tc.query, nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if got := jsonhttp.Bearer(r, tc.allowQuery); got != tc.want {
			t.Errorf("%s: Bearer = %q, want %q", tc.name, got, tc.want)
		}
	}
}
