package mcpimport

import (
	"fmt"
	"regexp"
	"strings"
)

// BaseEnv are the variables of the gateway's environment a command is
// started with, whatever its Config: what the official TypeScript SDK
// passes by default (its getDefaultEnvironment: HOME, LOGNAME, PATH,
// SHELL, TERM, USER), with LANG and TMPDIR. Nothing else of the gateway's
// environment reaches the command unless its Config.Env names it.
var BaseEnv = []string{"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER"}

// maxEnvVars bounds the variables one server may be given.
const maxEnvVars = 100

// envNamePattern is the shape of a variable a server may be given.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// gatewayEnvPrefix is the prefix of the gateway's own variables (its keys
// among them): never passed to a server, even when named.
const gatewayEnvPrefix = "TOOLGATE_"

// EnvGrant names variables of the gateway's environment that one imported
// server's command is started with, besides BaseEnv
// (--mcp-server-env NAME=VAR1,VAR2).
type EnvGrant struct {
	Server string
	Vars   []string
}

// ParseEnvGrant reads "NAME=VAR1,VAR2" (spaces around each are trimmed)
// and checks the variables' names: letters, digits and underscores, not
// starting with a digit, and none of the gateway's own (TOOLGATE_*).
func ParseEnvGrant(entry string) (EnvGrant, error) {
	name, vars, ok := strings.Cut(entry, "=")
	if !ok {
		return EnvGrant{}, fmt.Errorf("MCP server environment %q: want NAME=VAR1,VAR2 (the gateway's variables the server NAME is started with), e.g. github=GITHUB_TOKEN", entry)
	}
	g := EnvGrant{Server: strings.TrimSpace(name)}
	for _, v := range strings.Split(vars, ",") {
		if v = strings.TrimSpace(v); v != "" {
			g.Vars = append(g.Vars, v)
		}
	}
	return g, g.validate()
}

func (g EnvGrant) validate() error {
	if !NamePattern.MatchString(g.Server) {
		return fmt.Errorf("MCP server environment: server name %q must match %s", g.Server, NamePattern)
	}
	if len(g.Vars) == 0 {
		return fmt.Errorf("MCP server environment of %s: no variable named; want NAME=VAR1,VAR2", g.Server)
	}
	if len(g.Vars) > maxEnvVars {
		return fmt.Errorf("MCP server environment of %s: %d variables, at most %d", g.Server, len(g.Vars), maxEnvVars)
	}
	for _, v := range g.Vars {
		if strings.HasPrefix(strings.ToUpper(v), gatewayEnvPrefix) {
			return fmt.Errorf("MCP server environment of %s: %s is the gateway's own setting and is never passed to an MCP server", g.Server, v)
		}
		if !envNamePattern.MatchString(v) {
			return fmt.Errorf("MCP server environment of %s: %q is not a variable name (letters, digits and underscores, not starting with a digit); a value cannot be given here: set it in the command line, e.g. NAME=FOO=bar exec server", g.Server, v)
		}
	}
	return nil
}

// String is the grant as it is written: NAME=VAR1,VAR2.
func (g EnvGrant) String() string { return g.Server + "=" + strings.Join(g.Vars, ",") }

// WithEnv returns servers with each grant's variables in the Env of the
// server it names. A grant for a server not among servers, or over HTTP,
// or two grants for one server, are errors.
func WithEnv(servers []Config, grants []EnvGrant) ([]Config, error) {
	out := append([]Config(nil), servers...)
	given := map[string]bool{}
	for _, g := range grants {
		if err := g.validate(); err != nil {
			return nil, err
		}
		if given[g.Server] {
			return nil, fmt.Errorf("MCP server environment of %s is given twice; name every variable in one entry, NAME=VAR1,VAR2", g.Server)
		}
		given[g.Server] = true
		i := indexOfServer(out, g.Server)
		if i < 0 {
			return nil, fmt.Errorf("MCP server environment of %s: no MCP server %s is imported (--mcp-server %s=TARGET)", g.Server, g.Server, g.Server)
		}
		if out[i].IsHTTP() {
			return nil, fmt.Errorf("MCP server environment of %s: %s is reached over HTTP, not started as a command", g.Server, g.Server)
		}
		out[i].Env = append([]string(nil), g.Vars...)
	}
	return out, nil
}

func indexOfServer(servers []Config, name string) int {
	for i, c := range servers {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// commandEnv is the environment a command is started with: the variables
// of BaseEnv and of named that lookup finds, in that order, each once;
// the gateway's own (TOOLGATE_*) never, and no value that is a shell
// function definition ("() {...", as the TypeScript SDK also skips).
func commandEnv(named []string, lookup func(string) (string, bool)) []string {
	env := []string{} // not nil: a nil Env is the gateway's whole environment
	seen := map[string]bool{}
	for _, list := range [][]string{BaseEnv, named} {
		for _, k := range list {
			if seen[k] || strings.HasPrefix(strings.ToUpper(k), gatewayEnvPrefix) {
				continue
			}
			seen[k] = true
			if v, ok := lookup(k); ok && !strings.HasPrefix(v, "()") {
				env = append(env, k+"="+v)
			}
		}
	}
	return env
}
