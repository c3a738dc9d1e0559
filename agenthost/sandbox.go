package agenthost

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/agentloop"
	"github.com/toolgate/toolgate/sandbox"
)

// openSandbox adds the sandboxed tools of Options.SandboxDir (package
// sandbox) to reg as a tool set without a prefix, when the directory is
// set: a module named like a built-in tool or inside an imported MCP
// server's prefix is logged and not listed (Registry.CheckSetToolName).
// The set watches the directory until Tools.Close closes it.
func openSandbox(reg *agentloop.Registry, cfg Options, log *slog.Logger) (*sandbox.ToolSet, error) {
	if cfg.SandboxDir == "" {
		return nil, nil
	}
	set, err := sandbox.Open(sandbox.Options{
		Dir:      cfg.SandboxDir,
		CacheDir: sandboxCacheDir(cfg),
		Poll:     cfg.SandboxPoll,
		Admit:    reg.CheckSetToolName,
		Log:      log,
	})
	if err != nil {
		return nil, err
	}
	if err := reg.AddToolSet(set); err != nil {
		set.Close()
		return nil, fmt.Errorf("sandboxed tools: %w", err)
	}
	log.Info("sandboxed tools", "dir", cfg.SandboxDir, "tools", len(set.Tools()))
	return set, nil
}

// sandboxCacheDir is where compiled modules are kept: Config's, else
// toolgate/wazero in the user's cache directory, else nowhere (memory).
func sandboxCacheDir(cfg Options) string {
	if cfg.SandboxCacheDir != "" {
		return cfg.SandboxCacheDir
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "toolgate", "wazero")
}
