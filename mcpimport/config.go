// Package mcpimport makes toolgate an MCP client: it imports the tools of
// the MCP servers the gateway is started with (--mcp-server NAME=TARGET)
// into the agent loop's registry, as tool sets (toolgate.ToolSet) whose
// tools are called without a session, stored and shown in the history like
// every call.
//
// One Server per configured server keeps one connection to it, through
// the official Go SDK (github.com/modelcontextprotocol/go-sdk): a TARGET
// that starts with http:// or https:// is spoken to over Streamable HTTP
// (mcp.StreamableClientTransport); anything else is a command line, run
// as /bin/sh -c TARGET in a process group of its own, with a minimal
// environment (BaseEnv and the variables Config.Env names, never the
// gateway's TOOLGATE_*), and spoken to over its stdin and stdout
// (mcp.CommandTransport); its stderr goes to the gateway's log, a line at
// a time, at debug level until the server is online. A command that
// ignores the server/discover probe or exits on it is spoken to with
// initialize (discover.go). The client declares no capability: an
// imported server is offered no roots (an empty list), sampling or
// elicitation.
//
// The connection loop connects, lists the server's tools (every page, at
// most Options.MaxTools), lists them again when the server says they
// changed (notifications/tools/list_changed) and every
// Options.CheckInterval (which also tells whether the server still
// answers), and, when the connection ends or the server stops answering,
// marks the set offline, ends the process group of a command, and
// connects again after an exponential backoff (Options.MinBackoff doubling
// to Options.MaxBackoff, back to the minimum after a connection that
// lasted MaxBackoff), until Close. While offline the tools stay listed,
// and a call to one fails at once with TOOL_OFFLINE (Tool.Unavailable).
//
// A tool of the server named "search" is the gateway's NAME__search.
// Characters outside [A-Za-z0-9_-] (an MCP name may hold '.') become '_';
// a full name longer than 64 characters is cut and followed by '_' and 8
// hex digits of the SHA-256 of the tool's own name (importedToolName). A
// tool whose name would then be the same as another's is skipped with a
// warning in the log, as is a tool whose description or input schema the
// gateway refuses (toolgate.CheckToolSpec). The server is called with the
// tool's own name.
package mcpimport

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// NamePattern is the shape of a server's NAME: lowercase letters, digits
// and hyphens, at most 32 characters, with no underscore, so that
// NAME__tool splits at its first "__" and no set's prefix is another's.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Config is one MCP server to import: its NAME and its TARGET (a
// Streamable HTTP URL, or a command line spoken to over stdio).
type Config struct {
	Name   string
	Target string
	// Env names the variables of the gateway's environment a command is
	// started with besides BaseEnv (--mcp-server-env NAME=VAR1,VAR2);
	// the gateway's own (TOOLGATE_*) are refused. Nothing else of the
	// gateway's environment reaches the command.
	Env []string
}

// ParseConfig reads "NAME=TARGET" (spaces around either are trimmed) and
// checks it (Config.Validate).
func ParseConfig(entry string) (Config, error) {
	name, target, ok := strings.Cut(entry, "=")
	if !ok {
		return Config{}, fmt.Errorf("MCP server %q: want NAME=TARGET, e.g. files=http://localhost:3001/mcp or everything=npx -y @modelcontextprotocol/server-everything", entry)
	}
	c := Config{Name: strings.TrimSpace(name), Target: strings.TrimSpace(target)}
	return c, c.Validate()
}

// IsHTTP reports whether the server is reached over Streamable HTTP (its
// TARGET is an http:// or https:// URL) rather than started as a command.
func (c Config) IsHTTP() bool {
	t := strings.ToLower(c.Target)
	return strings.HasPrefix(t, "http://") || strings.HasPrefix(t, "https://")
}

// Validate checks the name's shape and that the target is a URL with a
// host, or a command line that is not blank.
func (c Config) Validate() error {
	if !NamePattern.MatchString(c.Name) {
		return fmt.Errorf("MCP server name %q must match %s (lowercase letters, digits and hyphens, no underscore: its tools are named NAME__tool)", c.Name, NamePattern)
	}
	if strings.TrimSpace(c.Target) == "" {
		return fmt.Errorf("MCP server %s: the target is empty; give an http(s):// URL or a command line", c.Name)
	}
	if strings.ContainsRune(c.Target, '\n') || strings.ContainsRune(c.Target, 0) {
		return fmt.Errorf("MCP server %s: the target must be one line", c.Name)
	}
	if len(c.Env) > 0 {
		if c.IsHTTP() {
			return fmt.Errorf("MCP server %s: variables are named for it, but it is reached over HTTP, not started as a command", c.Name)
		}
		if err := (EnvGrant{Server: c.Name, Vars: c.Env}).validate(); err != nil {
			return err
		}
	}
	if c.IsHTTP() {
		u, err := url.Parse(c.Target)
		if err != nil || u.Host == "" {
			return fmt.Errorf("MCP server %s: %q is not a valid URL", c.Name, c.Target)
		}
	}
	return nil
}

// ValidateAll checks every server and that no name is given twice.
func ValidateAll(servers []Config) error {
	var errs []error
	seen := map[string]bool{}
	for _, c := range servers {
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[c.Name] {
			errs = append(errs, fmt.Errorf("MCP server name %q is given twice", c.Name))
		}
		seen[c.Name] = true
	}
	return errors.Join(errs...)
}
