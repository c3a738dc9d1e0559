package engine

import "testing"

// TestJSONDepth: nesting is counted across objects and arrays, the outer
// one included; brackets inside strings, escaped quotes among them, are
// not nesting.
func TestJSONDepth(t *testing.T) {
	for _, tc := range []struct {
		json string
		want int
	}{
		{`1`, 0},
		{`{}`, 1},
		{`{"a":[1,{"b":[]}]}`, 4},
		{`{"a":[],"b":{},"c":[[]]}`, 3},
		{`{"s":"[[[{{{"}`, 1},
		{`{"s":"\"[[","t":"\\","u":[]}`, 2},
	} {
		if got := jsonDepth(tc.json); got != tc.want {
			t.Errorf("jsonDepth(%s) = %d, want %d", tc.json, got, tc.want)
		}
	}
}
