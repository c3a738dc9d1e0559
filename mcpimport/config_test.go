package mcpimport_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpimport"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		entry   string
		want    mcpimport.Config
		http    bool
		wantErr string
	}{
		{entry: "files=http://localhost:3001/mcp", want: mcpimport.Config{Name: "files", Target: "http://localhost:3001/mcp"}, http: true},
		{entry: " everything = npx -y @modelcontextprotocol/server-everything ", want: mcpimport.Config{Name: "everything", Target: "npx -y @modelcontextprotocol/server-everything"}},
		{entry: "a=HTTPS://example.com/mcp?x=1", want: mcpimport.Config{Name: "a", Target: "HTTPS://example.com/mcp?x=1"}, http: true},
		{entry: "env=FOO=bar ./server --flag", want: mcpimport.Config{Name: "env", Target: "FOO=bar ./server --flag"}},
		{entry: "files", wantErr: "want NAME=TARGET"},
		{entry: "=http://x", wantErr: "must match"},
		{entry: "my_files=http://x", wantErr: "no underscore"},
		{entry: "Files=http://x", wantErr: "must match"},
		{entry: "-files=http://x", wantErr: "must match"},
		{entry: strings.Repeat("a", 33) + "=http://x", wantErr: "must match"},
		{entry: "files=", wantErr: "the target is empty"},
		{entry: "files=http://", wantErr: "not a valid URL"},
	} {
		got, err := mcpimport.ParseConfig(tc.entry)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseConfig(%q): %v, want an error saying %q", tc.entry, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) || got.IsHTTP() != tc.http {
			t.Errorf("ParseConfig(%q) = %+v (http %v), %v; want %+v (http %v)", tc.entry, got, got.IsHTTP(), err, tc.want, tc.http)
		}
	}
}

func TestValidateAllRefusesDuplicates(t *testing.T) {
	err := mcpimport.ValidateAll([]mcpimport.Config{{Name: "a", Target: "x"}, {Name: "b", Target: "y"}, {Name: "a", Target: "z"}})
	if err == nil || !strings.Contains(err.Error(), `"a" is given twice`) {
		t.Fatalf("ValidateAll: %v", err)
	}
	if err := mcpimport.ValidateAll([]mcpimport.Config{{Name: "a", Target: "x"}, {Name: "a-b", Target: "y"}}); err != nil {
		t.Fatalf("ValidateAll of distinct names: %v", err)
	}
}
