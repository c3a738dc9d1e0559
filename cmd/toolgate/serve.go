package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/toolgate/toolgate/internal/options"
	"github.com/toolgate/toolgate/server"
)

func init() {
	commands["serve"] = command{summary: "run the gateway", run: runServe}
}

// serveFlags reads the serve command's settings from the option table
// (server.Options): the --config file, the environment and the command
// line, a flag winning over its variable and the variable over the file.
// Every value that cannot be read or is out of range, and every pair that
// cannot work together, is reported at once, before anything is opened.
// It returns the warnings of old names and spellings, to be logged.
func serveFlags(args []string) (server.Config, []string, error) {
	table := server.Options()
	cfg := table.Defaults()
	loaded, err := table.Load(&cfg, options.Sources{
		Args: args, LookupEnv: os.LookupEnv, Command: "toolgate serve",
		ConfigFlag: "config", ConfigEnv: "TOOLGATE_CONFIG",
	})
	if errors.Is(err, flag.ErrHelp) {
		return cfg, nil, flag.ErrHelp
	}
	if verr := cfg.ValidateFrom(loaded.From); verr != nil || err != nil {
		return cfg, loaded.Warnings, errors.Join(err, verr)
	}
	return cfg, loaded.Warnings, nil
}

func runServe(ctx context.Context, args []string) error {
	cfg, warnings, err := serveFlags(args)
	if err == flag.ErrHelp {
		return nil
	}
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %v", err) // Validate checked it; kept for a Config built otherwise
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	for _, w := range warnings {
		log.Warn(w)
	}
	srv, err := server.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return errors.Join(err, srv.Close())
	}
	warnIfNamesRefused(log, cfg)
	url := srv.URL()
	printAgentKey(url, cfg, srv.Engine)
	err = srv.Serve(ctx)
	return errors.Join(err, srv.Close())
}

// warnIfNamesRefused warns when the gateway listens on all interfaces with
// no --allowed-hosts: it then answers requests by address and localhost
// only, and refuses (421) those that name it, as a proxy passing its
// public name on does.
func warnIfNamesRefused(log *slog.Logger, cfg server.Config) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil || len(cfg.AllowedHosts) > 0 {
		return
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		log.Warn("listening on all interfaces with no --allowed-hosts: requests addressed by a host name (not an IP address or localhost) are refused with 421, against DNS rebinding; list the names this gateway is reached by in --allowed-hosts (TOOLGATE_ALLOWED_HOSTS)")
	}
}

// printAgentKey prints the serving line, then the agent key (and where a
// generated one is kept) and the console link holding it, only when the
// gateway generated the key: one the operator gave (--agent-key,
// TOOLGATE_AGENT_KEY) they know already, and printed it would end up in
// whatever collects the process's output (journald, container logs).
func printAgentKey(url string, cfg server.Config, eng *server.Engine) {
	fmt.Printf("toolgate serving on %s\n", url)
	key, file := eng.AgentKey(), eng.AgentKeyFile()
	switch {
	case cfg.AgentKey != "":
		fmt.Printf("agent key: the one given (--agent-key or TOOLGATE_AGENT_KEY), not printed\n")
		fmt.Printf("console: %s/#agent_key=<agent key>\n", url)
		return
	case file != "":
		fmt.Printf("agent key: %s (kept in %s)\n", key, file)
	default:
		fmt.Printf("agent key: %s\n", key)
	}
	fmt.Printf("console: %s/#agent_key=%s\n", url, key)
}
