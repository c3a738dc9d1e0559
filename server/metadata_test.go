package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMetadataKeepsNoAgentKey: the gateway never stores the agent key a
// client put in its metadata — a member named agent_key at any depth, or
// any string holding the key (a page URL with it in the fragment) — and
// keeps the rest as given.
func TestMetadataKeepsNoAgentKey(t *testing.T) {
	g := startGateway(t, nil)
	for _, tc := range []struct {
		name, metadata, want string
	}{
		{"top-level agent_key", `{"agent_key":"anything","user":"ada"}`, `{"user":"ada"}`},
		{"nested, any case", `{"page":{"Agent_Key":"x","title":"t"},"n":12345678901234567890}`, `{"n":12345678901234567890,"page":{"title":"t"}}`},
		{"the key as a value", `{"href":"http://x/#agent_key=` + testAgentKey + `","list":["` + testAgentKey + `",1]}`, `{"list":[null,1]}`},
		{"nothing to drop is kept byte for byte", `{"z": 1, "a": {"b": [1, 2]}}`, `{"z":1,"a":{"b":[1,2]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s session
			g.call("POST", "/v1/sessions", "", `{"metadata":`+tc.metadata+`}`, 201, &s)
			var view struct {
				Metadata json.RawMessage `json:"metadata"`
			}
			g.call("GET", "/v1/sessions/"+s.ID, testAgentKey, nil, 200, &view)
			if string(view.Metadata) != tc.want {
				t.Errorf("stored metadata %s, want %s", view.Metadata, tc.want)
			}
			_, list := g.do("GET", "/v1/sessions", testAgentKey, nil)
			if strings.Contains(string(list), testAgentKey) || strings.Contains(strings.ToLower(string(list)), "agent_key") {
				t.Errorf("GET /v1/sessions shows the agent key: %s", list)
			}
		})
	}
}
