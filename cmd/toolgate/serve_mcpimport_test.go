package main

import (
	"os"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpimport"
)

// TestServeMCPServerFlag: --mcp-server NAME=TARGET is repeatable;
// TOOLGATE_MCP_SERVERS holds one entry a line (blank lines skipped) and
// the flags, when given, replace it; a bad entry, and a name given twice,
// are refused at start-up naming what is wrong.
func TestServeMCPServerFlag(t *testing.T) {
	t.Setenv("TOOLGATE_MCP_SERVERS", "")
	os.Unsetenv("TOOLGATE_MCP_SERVERS")

	cfg, _, err := serveFlags([]string{"--mcp-server", "files=http://localhost:3001/mcp", "--mcp-server", "everything=npx -y @modelcontextprotocol/server-everything"})
	want := []mcpimport.Config{{Name: "files", Target: "http://localhost:3001/mcp"}, {Name: "everything", Target: "npx -y @modelcontextprotocol/server-everything"}}
	if err != nil || len(cfg.MCPServers) != 2 || cfg.MCPServers[0] != want[0] || cfg.MCPServers[1] != want[1] {
		t.Fatalf("from flags: %+v, %v", cfg.MCPServers, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mcp-server", "files"}, `--mcp-server: MCP server "files": want NAME=TARGET`},
		{[]string{"--mcp-server", "my_files=http://x/mcp"}, `MCP server name "my_files" must match`},
		{[]string{"--mcp-server", "files="}, "MCP server files: the target is empty"},
		{[]string{"--mcp-server", "a=x", "--mcp-server", "a=y"}, `MCP server name "a" is given twice`},
	} {
		if _, _, err := serveFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}

	t.Setenv("TOOLGATE_MCP_SERVERS", "files=http://localhost:3001/mcp\n\n  local = ./server --stdio  \n")
	cfg, _, err = serveFlags(nil)
	if err != nil || len(cfg.MCPServers) != 2 || cfg.MCPServers[1] != (mcpimport.Config{Name: "local", Target: "./server --stdio"}) {
		t.Fatalf("from the environment: %+v, %v", cfg.MCPServers, err)
	}
	cfg, _, err = serveFlags([]string{"--mcp-server", "other=http://other/mcp"})
	if err != nil || len(cfg.MCPServers) != 1 || cfg.MCPServers[0].Name != "other" {
		t.Fatalf("a flag over the environment: %+v, %v", cfg.MCPServers, err)
	}
	t.Setenv("TOOLGATE_MCP_SERVERS", "files=http://localhost:3001/mcp\nbroken")
	if _, _, err := serveFlags(nil); err == nil || !strings.Contains(err.Error(), `TOOLGATE_MCP_SERVERS: entry 2: MCP server "broken": want NAME=TARGET`) {
		t.Fatalf("a bad line in the environment: %v", err)
	}
}
