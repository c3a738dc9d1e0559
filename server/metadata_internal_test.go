package server

import "testing"

// TestHasDuplicateKey: a member named twice in one object, at any depth
// and however spelled, is found; the same name in different objects, or
// a name that is also a value, is not a duplicate.
func TestHasDuplicateKey(t *testing.T) {
	for _, tc := range []struct {
		json string
		want bool
	}{
		{`{"a":1,"b":2}`, false},
		{`{"a":1,"a":2}`, true},
		{`{"a":1,"\u0061":2}`, true},
		{`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`, false},
		{`{"a":"b","b":"a"}`, false},
		{`{"x":[1,{"k":{},"k":[]}]}`, true},
		{`{"x":{"y":{"z":1,"w":2,"z":3}}}`, true},
		{`{"a":[],"b":{},"c":null,"a":0}`, true},
		{`{"a":`, true},
	} {
		if got := hasDuplicateKey([]byte(tc.json)); got != tc.want {
			t.Errorf("hasDuplicateKey(%s) = %v, want %v", tc.json, got, tc.want)
		}
	}
}
