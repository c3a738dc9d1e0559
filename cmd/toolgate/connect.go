package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/reconnect"
	"github.com/toolgate/toolgate/mobile"
)

func init() {
	commands["connect"] = command{
		summary: "offer this computer's tools (device_info and a folder of scripts) to a gateway",
		run:     runConnect,
	}
}

// connectConfig is what `toolgate connect` is told by its flags and the
// environment.
type connectConfig struct {
	URL           string
	ToolsDir      string
	StatePath     string
	ClientKey     string
	ClientKeyFile string
	Name          string
	Transport     string
	Workers       int
	Rescan        time.Duration
}

// parseConnectFlags reads the flags, with environment variables as their
// defaults.
func parseConnectFlags(args []string, stderr io.Writer) (*connectConfig, error) {
	cfg := &connectConfig{}
	fs := flag.NewFlagSet("toolgate connect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.URL, "url", os.Getenv("TOOLGATE_URL"), "gateway URL, e.g. http://127.0.0.1:8080 (env TOOLGATE_URL)")
	fs.StringVar(&cfg.ToolsDir, "tools-dir", os.Getenv("TOOLGATE_TOOLS_DIR"), "folder of executables, each with NAME.json beside it, offered as tools (env TOOLGATE_TOOLS_DIR)")
	fs.StringVar(&cfg.StatePath, "state", envOr("TOOLGATE_STATE", defaultStatePath()), "file keeping the session, so a restart resumes it (env TOOLGATE_STATE)")
	fs.StringVar(&cfg.ClientKey, "client-key", os.Getenv("TOOLGATE_CLIENT_KEY"), "client key, when the gateway requires one to create sessions (env TOOLGATE_CLIENT_KEY)")
	fs.StringVar(&cfg.ClientKeyFile, "client-key-file", os.Getenv("TOOLGATE_CLIENT_KEY_FILE"), "file holding the client key (env TOOLGATE_CLIENT_KEY_FILE)")
	fs.StringVar(&cfg.Name, "name", envOr("TOOLGATE_CLIENT_NAME", "toolgate-connect"), "client name shown by the gateway (env TOOLGATE_CLIENT_NAME)")
	fs.StringVar(&cfg.Transport, "transport", envOr("TOOLGATE_TRANSPORT", mobile.TransportAuto), "how calls are received: auto, sse or poll (env TOOLGATE_TRANSPORT)")
	fs.IntVar(&cfg.Workers, "workers", 4, "calls that may run at once")
	fs.DurationVar(&cfg.Rescan, "rescan", 2*time.Second, "how often the tools folder is checked for added, changed or removed tools (0: never)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return cfg, cfg.validate()
}

// validate checks the configuration and reads the client key file.
func (cfg *connectConfig) validate() error {
	if cfg.URL == "" {
		return errors.New("--url (or TOOLGATE_URL) is required")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return fmt.Errorf("--url %q must start with http:// or https://", cfg.URL)
	}
	if cfg.StatePath == "" {
		return errors.New("--state is required (no user config folder to default to)")
	}
	if cfg.ToolsDir != "" {
		info, err := os.Stat(cfg.ToolsDir)
		if err != nil {
			return fmt.Errorf("--tools-dir: %w", err)
		} else if !info.IsDir() {
			return fmt.Errorf("--tools-dir %s is not a folder", cfg.ToolsDir)
		}
	}
	if cfg.ClientKeyFile != "" {
		b, err := os.ReadFile(cfg.ClientKeyFile)
		if err != nil {
			return fmt.Errorf("--client-key-file: %w", err)
		}
		cfg.ClientKey = strings.TrimSpace(string(b))
	}
	if cfg.Workers < 1 {
		return errors.New("--workers must be at least 1")
	}
	if cfg.Rescan < 0 {
		return errors.New("--rescan must not be negative")
	}
	return nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// defaultStatePath is the state file in the user's config folder.
func defaultStatePath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "toolgate", "connect-session.json")
}

// runConnect offers device_info and the folder's tools until ctx ends.
func runConnect(ctx context.Context, args []string) error {
	cfg, err := parseConnectFlags(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	client := mobile.NewClient(cfg.URL)
	client.SetLogger(mobileLogger{log})
	client.SetSessionStore(mobile.NewFileSessionStore(cfg.StatePath))
	client.SetClientKey(cfg.ClientKey)
	client.SetClientInfo(cfg.Name, "", "desktop")
	client.SetWorkers(cfg.Workers)
	if err := client.SetTransport(cfg.Transport); err != nil {
		return err
	}
	if err := registerDeviceInfo(client); err != nil {
		return err
	}
	var folder *toolFolder
	if cfg.ToolsDir != "" {
		folder = newToolFolder(cfg.ToolsDir, client, log)
		folder.scan()
	}
	if err := connectWithRetry(ctx, client, log, reconnect.New()); err != nil {
		return err
	}
	defer client.Close()
	log.Info("toolgate connect: offering tools", "url", cfg.URL, "session", client.SessionID(), "tools", client.ToolNamesJSON(), "state", cfg.StatePath)
	if folder == nil || cfg.Rescan == 0 {
		<-ctx.Done()
		return nil
	}
	tick := time.NewTicker(cfg.Rescan)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			folder.scan()
		}
	}
}

// connectWithRetry connects, retrying while the gateway cannot be reached
// or fails on its side, with the SDK's reconnect policy (backing off over
// attempts that fail, a Retry-After waited at least); a refusal (a wrong
// client key) ends it. Once connected, the SDK reconnects by itself.
func connectWithRetry(ctx context.Context, client *mobile.Client, log *slog.Logger, policy *reconnect.Policy) error {
	for {
		err := client.Connect()
		if err == nil {
			return nil
		}
		var apiErr *mobile.APIError
		if errors.As(err, &apiErr) {
			if apiErr.Status < 500 && apiErr.Status != 429 {
				return err
			}
			policy.RetryAfter(time.Duration(apiErr.RetryAfterMS()) * time.Millisecond)
		}
		wait := policy.Next()
		log.Warn("toolgate connect: cannot reach the gateway; retrying", "error", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// mobileLogger passes the SDK client's log lines to the command's logger.
type mobileLogger struct{ log *slog.Logger }

// Log implements mobile.Logger; the SDK's levels are slog's level names.
func (m mobileLogger) Log(level, message string) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	m.log.Log(context.Background(), l, message, "component", "toolgate/mobile")
}
