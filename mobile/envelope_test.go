package mobile

import (
	"encoding/json"
	"testing"
)

func TestParseEnvelopeMapsEveryCETPCode(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"AUTH_REQUIRED", "PERMISSION_DENIED", "TOOL_NOT_FOUND", "INVALID_ARGS", "RATE_LIMITED", "INTERNAL_ERROR"} {
		reply := `{"status":"error","error_code":"` + code + `","error_message":"because ` + code + `","resolution_hint":"open the app","authorize_intent":"com.example.AUTHORIZE"}`
		data, te := parseEnvelope(reply)
		if data != nil || te == nil {
			t.Fatalf("%s: got data %s, error %v; want a tool error", code, data, te)
		}
		if te.Code != code || te.Message != "because "+code {
			t.Errorf("%s: got %s %q", code, te.Code, te.Message)
		}
		var details map[string]string
		if err := json.Unmarshal([]byte(te.DetailsJSON), &details); err != nil {
			t.Fatalf("%s: details %q: %v", code, te.DetailsJSON, err)
		}
		if details["resolution_hint"] != "open the app" || details["authorize_intent"] != "com.example.AUTHORIZE" {
			t.Errorf("%s: details %v lost the hints", code, details)
		}
	}
}

func TestParseEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, reply       string
		wantData          string
		wantCode, details string
	}{
		{name: "data as a JSON string", reply: `{"status":"success","data":"{\"steps\": 42}"}`, wantData: `{"steps": 42}`},
		{name: "data as an object", reply: `{"status":"success","data":{"steps":42}}`, wantData: `{"steps":42}`},
		{name: "data as plain text", reply: `{"status":"success","data":"hello"}`, wantData: `"hello"`},
		{name: "no data", reply: `{"status":"success"}`, wantData: `null`},
		{name: "unknown code", reply: `{"status":"error","error_code":"QUOTA","error_message":"over quota"}`, wantCode: "INTERNAL_ERROR", details: `{"provider_error_code":"QUOTA"}`},
		{name: "error without hints", reply: `{"status":"error","error_code":"INVALID_ARGS","error_message":"bad"}`, wantCode: "INVALID_ARGS"},
		{name: "not JSON", reply: `oops`, wantCode: "INTERNAL_ERROR"},
		{name: "unknown status", reply: `{"status":"maybe"}`, wantCode: "INTERNAL_ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, te := parseEnvelope(tt.reply)
			if tt.wantCode != "" {
				if te == nil || te.Code != tt.wantCode {
					t.Fatalf("got data %s, error %v; want code %s", data, te, tt.wantCode)
				}
				if te.DetailsJSON != tt.details {
					t.Errorf("details %q, want %q", te.DetailsJSON, tt.details)
				}
				return
			}
			if te != nil || string(data) != tt.wantData {
				t.Fatalf("got data %s, error %v; want %s", data, te, tt.wantData)
			}
		})
	}
}

func TestParseToolList(t *testing.T) {
	t.Parallel()
	tools, err := parseToolList(`{"status":"success","data":"{\"tools\":[{\"name\":\"get_steps\",\"description\":\"Steps today\",\"parameters\":{\"type\":\"object\"}}]}"}`)
	if err != nil || len(tools) != 1 || tools[0].Name != "get_steps" || string(tools[0].Parameters) != `{"type":"object"}` {
		t.Fatalf("got %+v, %v", tools, err)
	}
	if _, err := parseToolList(`{"status":"success","data":{"items":[]}}`); err == nil {
		t.Error("a list without a tools array was accepted")
	}
	if _, err := parseToolList(`{"status":"error","error_code":"PERMISSION_DENIED","error_message":"no"}`); err == nil {
		t.Error("an error envelope was accepted as a tool list")
	}
}

func TestProviderLabel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"com.example.fitness": "com_example_fitness", "Notes": "Notes", "..a b..": "a_b"} {
		if got := ProviderLabel(in); got != want {
			t.Errorf("ProviderLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
