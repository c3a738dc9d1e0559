package toolgate

import "testing"

// TestCheckStrictJSONValuesCounts: every object, array and scalar is
// counted once, member names not, whatever the white space.
func TestCheckStrictJSONValuesCounts(t *testing.T) {
	cases := map[string]int{
		`{}`:                           1,
		`null`:                         1,
		` -1.5e+3 `:                    1,
		`"s"`:                          1,
		`[]`:                           1,
		`[1,2,3]`:                      4,
		`[ true , false , null ]`:      4,
		`{"a":1,"b":"x","c":[{}]}`:     5,
		"{\"a\" :\t[ 1 ,\n2 ] }":       4,
		`{"a":{"b":{"c":"d"}},"e":[]}`: 5,
		`["a,b","c]d",{"}":"{"}]`:      5,
	}
	for raw, want := range cases {
		got, err := CheckStrictJSONValues([]byte(raw))
		if err != nil || got != want {
			t.Errorf("%s: %d values, %v; want %d", raw, got, err, want)
		}
	}
	if _, err := CheckStrictJSONValues([]byte(`{"a":1,"a":2}`)); err == nil {
		t.Error("a duplicate member was not refused")
	}
}
