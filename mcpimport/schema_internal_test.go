package mcpimport

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestWithObjectType: a schema with no type and nothing against an object
// becomes an object schema the gateway takes; one that says otherwise is
// left as it is, and refused.
func TestWithObjectType(t *testing.T) {
	for _, tc := range []struct {
		schema, want string
		taken        bool
	}{
		{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, true},
		{`{"properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`, `{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}`, true},
		{`{}`, `{"type":"object"}`, true},
		{`{"type":"object","properties":{}}`, `{"type":"object","properties":{}}`, true},
		{`{"type":"string"}`, `{"type":"string"}`, false},
		{`{"items":{"type":"string"}}`, `{"items":{"type":"string"}}`, false},
		{`{"enum":[1,2]}`, `{"enum":[1,2]}`, false},
		{`{"anyOf":[{"type":"string"}]}`, `{"anyOf":[{"type":"string"}]}`, false},
		{`[1]`, `[1]`, false},
	} {
		got := withObjectType(json.RawMessage(tc.schema))
		if string(got) != tc.want {
			t.Errorf("withObjectType(%s) = %s, want %s", tc.schema, got, tc.want)
		}
		err := toolgate.CheckToolParameters(got)
		if (err == nil) != tc.taken {
			t.Errorf("%s: CheckToolParameters = %v, want taken %v", got, err, tc.taken)
		}
	}
}
