package main

import "github.com/toolgate/toolgate/server"

//go:generate go test -run TestConfigurationDoc -update .

// configurationDoc is docs/CONFIGURATION.md: this introduction, then the
// option table (server.Options) written out. A test keeps the file in
// step with the table.
func configurationDoc() string {
	return server.Options().Markdown(configIntro)
}

const configIntro = "# Configuration of `toolgate serve`\n\n" +
	"<!-- Written from the option table in server/options.go by\n" +
	"     go generate ./cmd/toolgate (go test ./cmd/toolgate -run TestConfigurationDoc -update)\n" +
	"     Edit the table (and the introduction in cmd/toolgate/configdoc.go), not this file. -->\n\n" +
	`Every setting of ` + "`toolgate serve`" + ` can be given three ways: a flag, an environment
variable, and a key of a YAML config file named by ` + "`--config FILE`" + ` (or ` + "`TOOLGATE_CONFIG`" + `).
The tables below list each setting once, with all three names, its default, and the values it takes.
` + "`toolgate serve -h`" + ` prints the same.

## Which value wins

A flag wins over its environment variable, the variable over the config file, and the file over
the default:

    flag  >  environment variable  >  config file  >  default

A list (` + "`--allowed-origins`" + `, ` + "`--mcp-server`" + `, ...) is replaced whole by the source that wins,
never merged: one ` + "`--mcp-server`" + ` flag replaces the variable's and the file's list.

## The config file

One YAML mapping of the keys in the tables to their values. A key that is no setting's is an
error naming the key and its line, and so is a key given twice. Lists are YAML sequences (or a
comma-separated string, as on the command line). The file is a regular file of at most 1 MiB
holding one YAML document.

A setting given under both its name and its old name (an old flag beside the new one, or both
variables set) is an error naming both: neither wins silently.

` + "```yaml" + `
# toolgate.yaml: toolgate serve --config toolgate.yaml
addr: 127.0.0.1:8080
db: ./toolgate.db
allowed_hosts: [gw.example.com]
trusted_proxies:
  - 10.0.0.0/8
event_retention: 72h
max_runs_per_session: 2
address_session_rate: off
max_connections_per_address: auto
mcp_servers:
  - files=http://localhost:3001/mcp
` + "```" + `

Secrets (` + "`agent_key`" + `, ` + "`client_key`" + `, ` + "`llm_api_key`" + `) can live in the file; keep it readable by the
gateway's user only, or give them in the environment.

## Values

- **Durations** are written as Go durations: ` + "`500ms`, `30s`, `5m`, `2h`" + `. Negative durations are errors.
- **Limits that can be switched off** take ` + "`off`" + `; a count that is then unbounded also takes
  ` + "`unlimited`" + ` (the same thing). **Derived values** take ` + "`auto`" + `, which the row says how to derive.
- **Lists** are comma-separated on the command line and in the environment (` + "`--mcp-server`" + ` is
  repeated instead, and its variable holds one entry a line).
- Every value is checked against its range before anything is opened (database, listeners), and
  every problem is reported at once.

Before ` + "`off`" + ` and ` + "`auto`" + ` could be said, 0 meant three things: "the default" (e.g. ` + "`--max-tools-per-session`" + `,
the durations), "off" (the abuse limits) and "derived" (` + "`--max-connections`" + `, ` + "`--max-connections-per-address`" + `,
` + "`--max-runs-per-address`" + `, where -1 meant off). These numbers are still accepted for one more release,
with a warning in the log that says what to write instead.
`
