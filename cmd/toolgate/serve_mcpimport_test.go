package main

import (
	"os"
	"reflect"
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
	if err != nil || !reflect.DeepEqual(cfg.MCPServers, want) {
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
	if err != nil || len(cfg.MCPServers) != 2 || !reflect.DeepEqual(cfg.MCPServers[1], mcpimport.Config{Name: "local", Target: "./server --stdio"}) {
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

// TestServeMCPServerEnvFlag: --mcp-server-env NAME=VAR1,VAR2 names the
// variables an imported command gets; the gateway's own (TOOLGATE_*), a
// server not imported, one over HTTP, a value instead of a name and a
// server given twice are refused at start-up naming what is wrong.
func TestServeMCPServerEnvFlag(t *testing.T) {
	t.Setenv("TOOLGATE_MCP_SERVERS", "")
	t.Setenv("TOOLGATE_MCP_SERVER_ENV", "")
	os.Unsetenv("TOOLGATE_MCP_SERVERS")
	os.Unsetenv("TOOLGATE_MCP_SERVER_ENV")

	cfg, _, err := serveFlags([]string{"--mcp-server", "gh=npx -y github-server", "--mcp-server-env", "gh= GITHUB_TOKEN , HTTPS_PROXY"})
	want := []mcpimport.EnvGrant{{Server: "gh", Vars: []string{"GITHUB_TOKEN", "HTTPS_PROXY"}}}
	if err != nil || !reflect.DeepEqual(cfg.MCPServerEnv, want) {
		t.Fatalf("from flags: %+v, %v", cfg.MCPServerEnv, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mcp-server", "gh=x", "--mcp-server-env", "gh=TOOLGATE_AGENT_KEY"}, "TOOLGATE_AGENT_KEY is the gateway's own setting and is never passed"},
		{[]string{"--mcp-server", "gh=x", "--mcp-server-env", "gh=toolgate_client_key"}, "toolgate_client_key is the gateway's own setting"},
		{[]string{"--mcp-server", "gh=x", "--mcp-server-env", "other=A"}, "no MCP server other is imported"},
		{[]string{"--mcp-server", "gh=http://h/mcp", "--mcp-server-env", "gh=A"}, "gh is reached over HTTP"},
		{[]string{"--mcp-server", "gh=x", "--mcp-server-env", "gh=A=b"}, `"A=b" is not a variable name`},
		{[]string{"--mcp-server", "gh=x", "--mcp-server-env", "gh"}, "want NAME=VAR1,VAR2"},
		{[]string{"--mcp-server", "gh=x", "--mcp-server-env", "gh="}, "no variable named"},
		{[]string{"--mcp-server", "gh=x", "--mcp-server-env", "gh=A", "--mcp-server-env", "gh=B"}, "gh is given twice"},
	} {
		if _, _, err := serveFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
