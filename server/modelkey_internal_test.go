package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// modelKey is the operator's model API key in these tests: not shaped like
// any known credential, so only its being a known secret can redact it.
const modelKey = "mk-operator-Zq8vX2pL9sR4tY7uW1eA3dF6"

// rejectingModel is an OpenAI-compatible endpoint that refuses every
// request with 401, its body quoting the key it was sent, as OpenAI's
// does ("Incorrect API key provided: …").
func rejectingModel(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		sent := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: Bearer %s. You can find your API key at https://example.com/keys.","type":"invalid_request_error","code":"invalid_api_key"}}`, sent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// The model endpoint's error body repeats the API key: the run of an
// anonymous session's token fails MODEL_ERROR with the endpoint's message
// redacted in its record, its event stream and the WARN "run failed" line.
func TestModelKeyNotLeakedByItsErrors(t *testing.T) {
	cfg := testConfig(t)
	cfg.LLMBaseURL, cfg.LLMModel, cfg.LLMAPIKey = rejectingModel(t), "gpt-test", modelKey
	logs := &lockedBuffer{}
	srv, _ := startServerLogging(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	base := srv.URL()

	do := func(method, path, secret, body string, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := do("POST", "/v1/sessions", "", `{"client":{"name":"anon"}}`, "")
	var sess struct {
		ID    string `json:"session_id"`
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sess); err != nil || resp.StatusCode != 201 {
		t.Fatalf("session: %d %v", resp.StatusCode, err)
	}
	stream := do("POST", "/v1/sessions/"+sess.ID+"/runs", sess.Token, `{"input":"hi"}`, "text/event-stream")
	if stream.StatusCode != 200 {
		b, _ := io.ReadAll(stream.Body)
		t.Fatalf("run: %d %s", stream.StatusCode, b)
	}
	var events strings.Builder
	var runID string
	sc := bufio.NewScanner(stream.Body)
	for sc.Scan() {
		line := sc.Text()
		events.WriteString(line + "\n")
		if strings.HasPrefix(line, "data: ") && runID == "" {
			var ev struct {
				RunID string `json:"run_id"`
			}
			json.Unmarshal([]byte(line[len("data: "):]), &ev)
			runID = ev.RunID
		}
		if strings.HasPrefix(line, "event: run_failed") || strings.HasPrefix(line, "event: run_finished") {
			sc.Scan()
			events.WriteString(sc.Text() + "\n")
			break
		}
	}
	if !strings.Contains(events.String(), "MODEL_ERROR") || !strings.Contains(events.String(), "Incorrect API key provided") {
		t.Fatalf("the run's events: %s; want run_failed MODEL_ERROR with the endpoint's message", events.String())
	}
	record := do("GET", "/v1/sessions/"+sess.ID+"/runs/"+runID, sess.Token, "", "")
	rec, _ := io.ReadAll(record.Body)
	if record.StatusCode != 200 || !strings.Contains(string(rec), "[REDACTED:llm_api_key]") {
		t.Errorf("the run's record: %d %s; want its error message with the key redacted", record.StatusCode, rec)
	}
	srv.Close() // the log is complete
	for what, text := range map[string]string{"the run's events": events.String(), "the run's record": string(rec), "the log": logs.String()} {
		if strings.Contains(text, modelKey) || strings.Contains(text, modelKey[len(modelKey)-12:]) {
			t.Errorf("%s hold the model's API key:\n%s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "run failed") {
		t.Errorf("no WARN run failed in the log:\n%s", logs.String())
	}
}

// echoingModel is an OpenAI-compatible endpoint (or a proxy before one)
// whose successful replies repeat the key it was sent: its first turn
// calls a tool with the key in the arguments, its second answers with the
// key as it is, percent-encoded (every character but letters and digits
// escaped, as `sk%2Dproj%2D…`) and cut in two pieces.
func echoingModel(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		sent := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		var msg map[string]any
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" {
			var enc strings.Builder
			for _, c := range []byte(sent) {
				if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
					enc.WriteByte(c)
				} else {
					fmt.Fprintf(&enc, "%%%02X", c)
				}
			}
			msg = map[string]any{"role": "assistant", "content": "your header was Bearer " + sent + ", encoded " + enc.String() + ", split " + sent[:12] + " / " + sent[12:]}
		} else {
			args, _ := json.Marshal(map[string]string{"text": "key " + sent})
			msg = map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
				"id": "c1", "type": "function", "function": map[string]any{"name": "no_such_tool", "arguments": string(args)},
			}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// A model endpoint's successful replies repeat the API key: the tool
// call's arguments and the answer reach an anonymous session's run events
// and record with the key redacted, also its percent-encoded form and
// the longer of its pieces.
func TestModelKeyNotLeakedByItsReplies(t *testing.T) {
	cfg := testConfig(t)
	cfg.LLMBaseURL, cfg.LLMModel, cfg.LLMAPIKey = echoingModel(t), "gpt-test", modelKey
	srv, _ := startServerLogging(t, cfg, slog.New(slog.DiscardHandler))
	base := srv.URL()
	do := func(method, path, secret, body string, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := do("POST", "/v1/sessions", "", `{"client":{"name":"anon"}}`, "")
	var sess struct {
		ID    string `json:"session_id"`
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sess); err != nil || resp.StatusCode != 201 {
		t.Fatalf("session: %d %v", resp.StatusCode, err)
	}
	stream := do("POST", "/v1/sessions/"+sess.ID+"/runs", sess.Token, `{"input":"hi"}`, "text/event-stream")
	if stream.StatusCode != 200 {
		b, _ := io.ReadAll(stream.Body)
		t.Fatalf("run: %d %s", stream.StatusCode, b)
	}
	var events strings.Builder
	var runID string
	sc := bufio.NewScanner(stream.Body)
	for sc.Scan() {
		line := sc.Text()
		events.WriteString(line + "\n")
		if strings.HasPrefix(line, "data: ") && runID == "" {
			var ev struct {
				RunID string `json:"run_id"`
			}
			json.Unmarshal([]byte(line[len("data: "):]), &ev)
			runID = ev.RunID
		}
		if strings.HasPrefix(line, "event: run_failed") || strings.HasPrefix(line, "event: run_finished") {
			sc.Scan()
			events.WriteString(sc.Text() + "\n")
			break
		}
	}
	ev := events.String()
	if !strings.Contains(ev, "event: tool_call_started") || !strings.Contains(ev, "event: run_finished") || !strings.Contains(ev, "your header was Bearer [REDACTED:llm_api_key]") {
		t.Fatalf("the run's events: %s; want the tool call and the answer, the key redacted", ev)
	}
	record := do("GET", "/v1/sessions/"+sess.ID+"/runs/"+runID, sess.Token, "", "")
	rec, _ := io.ReadAll(record.Body)
	if record.StatusCode != 200 || !strings.Contains(string(rec), "encoded [REDACTED:llm_api_key]") {
		t.Errorf("the run's record: %d %s; want its output with the key redacted", record.StatusCode, rec)
	}
	for what, text := range map[string]string{"the run's events": ev, "the run's record": string(rec)} {
		if strings.Contains(text, modelKey[len(modelKey)-12:]) {
			t.Errorf("%s hold the model's API key:\n%s", what, text)
		}
	}
}
