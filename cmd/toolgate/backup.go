package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/internal/options"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store"
)

func init() {
	commands["backup"] = command{
		summary: "write a consistent copy of a serving gateway's SQLite database and its agent key file",
		run:     func(ctx context.Context, args []string) error { return runBackup(ctx, args, os.Stdout, os.Stderr) },
	}
	commands["restore"] = command{
		summary: "put a backup in place as the database of a stopped gateway",
		run:     func(ctx context.Context, args []string) error { return runRestore(ctx, args, os.Stdout, os.Stderr) },
	}
}

// databaseFlags reads the database's location as toolgate serve does —
// the same --db flag, TOOLGATE_DB variable and db key of the --config
// file (server.Options) — together with the command's own flags, which
// add registers. The --config file may hold toolgate serve's other
// settings; they are skipped.
func databaseFlags(command string, args []string, stderr io.Writer, add func(fs *flag.FlagSet)) (string, error) {
	all := server.Options()
	table := all.Only("db")
	cfg := table.Defaults()
	_, err := table.Load(&cfg, options.Sources{
		Args: args, LookupEnv: os.LookupEnv, Command: command,
		ConfigFlag: "config", ConfigEnv: "TOOLGATE_CONFIG", Output: stderr,
		Flags: add, OtherKeys: all.HasKey,
	})
	return cfg.DBPath, err
}

// runBackup is toolgate backup: the database copied with
// store.BackupSQLite, and the agent key file beside it (server.AgentKeyFile)
// copied beside the copy under the same rule, so that the backup is a
// database a gateway can be started on as it is.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var to string
	var force bool
	db, err := databaseFlags("toolgate backup", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&to, "to", "", "file to write the backup to (required); its agent key file is written beside it as FILE.agent-key")
		fs.BoolVar(&force, "force", false, "replace the file (and its key file) when it exists")
	})
	if errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if to == "" {
		return errors.New("--to FILE is required")
	}
	if err := store.CheckBackupPaths(db, to, force); err != nil {
		return err
	}
	keyFile, keyTarget := server.AgentKeyFile(db), server.AgentKeyFile(to)
	key, err := readKeyFile(keyFile)
	if err != nil {
		return err
	}
	if key != nil && !force {
		if _, err := os.Lstat(keyTarget); err == nil {
			return fmt.Errorf("%s exists: give --force to replace it", keyTarget)
		}
	}
	// The key file goes first: a backup interrupted after it leaves a
	// stray key file, never a database without its key.
	if key != nil {
		if err := writePrivateFile(keyTarget, key); err != nil {
			return err
		}
	} else if force {
		// A key file an earlier backup left beside the target is not this
		// backup's: restore would put back a key the gateway no longer has.
		if err := os.Remove(keyTarget); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	info, err := store.BackupSQLite(ctx, db, to, force)
	if err != nil {
		return err
	}
	if after, err := readKeyFile(keyFile); err != nil {
		return err
	} else if !bytes.Equal(after, key) {
		return fmt.Errorf("the agent key file %s changed while the backup ran (a restart rotated the key?): run the backup again", keyFile)
	}
	fmt.Fprintf(stdout, "backup written to %s: %d bytes, %d migrations, the copy's read took %s\n", to, info.Bytes, info.Migrations, info.Took.Round(1e6))
	if key != nil {
		fmt.Fprintf(stdout, "agent key file copied to %s\n", keyTarget)
	} else {
		fmt.Fprintf(stdout, "no agent key file beside the database (the gateway is given --agent-key): keep that key with the backup\n")
	}
	return nil
}

// runRestore is toolgate restore: the backup checked and put in place by
// store.RestoreSQLite (which refuses while a gateway has the database
// open), then the backup's agent key file put beside it.
func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var from string
	var force bool
	db, err := databaseFlags("toolgate restore", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&from, "from", "", "backup file to restore (required), as written by toolgate backup; its FILE.agent-key is restored too")
		fs.BoolVar(&force, "force", false, "replace the database when one is there (its gateway must be stopped)")
	})
	if errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if from == "" {
		return errors.New("--from FILE is required")
	}
	key, err := readKeyFile(server.AgentKeyFile(from))
	if err != nil {
		return err
	}
	if err := store.RestoreSQLite(ctx, from, db, force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s from %s\n", db, from)
	keyFile := server.AgentKeyFile(db)
	if key == nil {
		fmt.Fprintf(stdout, "the backup has no agent key file: start the gateway with the --agent-key it was given\n")
		return nil
	}
	if err := writePrivateFile(keyFile, key); err != nil {
		return fmt.Errorf("the database is restored, but not its agent key file: %w", err)
	}
	fmt.Fprintf(stdout, "agent key file restored to %s\n", keyFile)
	return nil
}

// readKeyFile returns the content of an agent key file; nil when there is
// none (or no path: a PostgreSQL database).
func readKeyFile(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// writePrivateFile writes data to path, readable by its owner alone,
// whole or not at all: a synced temporary file beside it, renamed over it.
func writePrivateFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err = errors.Join(err, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
