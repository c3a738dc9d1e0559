package toolgate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestStrictJSONBodyForFoldedNames: a member whose name folds (as
// encoding/json folds: bytes.EqualFold) to a field of the shape but is
// not that field's exact name is refused, at any depth of structs, slices
// and maps; raw JSON, maps' keys and unknown names are not held to it.
func TestStrictJSONBodyForFoldedNames(t *testing.T) {
	type inner struct {
		Kind string `json:"kind"`
	}
	type shape struct {
		Name  string            `json:"name"`
		Items []inner           `json:"items"`
		ByID  map[string]inner  `json:"by_id"`
		Raw   json.RawMessage   `json:"raw"`
		Any   any               `json:"any"`
		Tags  map[string]string `json:"tags"`
		Self  *shape            `json:"self"`
	}
	for _, c := range []struct{ body, want string }{
		{`{"name":"a","NAME":"b"}`, `names the member "NAME" in the top-level object: member names are case-sensitive (did you mean "name"?)`},
		{`{"items":[{"kind":"a"},{"\u212aind":"b"}]}`, "names the member \"\u212aind\" in the object at /items/1"}, // KELVIN SIGN
		{`{"by_id":{"x":{"KIND":"b"}}}`, `in the object at /by_id/x`},
		{`{"self":{"self":{"Name":"b"}}}`, `in the object at /self/self`},
		{`{"BY_ID":{}}`, `did you mean "by_id"?`},
	} {
		var v shape
		if json.Unmarshal([]byte(c.body), &v) != nil {
			t.Fatalf("%s: Go does not read it", c.body)
		}
		err := toolgate.CheckStrictJSONBodyFor([]byte(c.body), &v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
	for _, ok := range []string{
		`{"name":"a","items":[{"kind":"a"}],"by_id":{"X":{"kind":"b"},"x":{}},"self":{"name":"b"}}`,
		`{"raw":{"Name":1,"name":2},"any":{"NAME":1,"name":2},"tags":{"Name":"a","name":"b"}}`,
		`{"name":"a","other":1}`,
	} {
		if err := toolgate.CheckStrictJSONBodyFor([]byte(ok), (*shape)(nil)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
