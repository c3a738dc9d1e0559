package options

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWith loads the test table with args and environment into the
// defaults, with nothing written out.
func loadWith(t *testing.T, args []string, vars map[string]string) (conf, Loaded, error) {
	t.Helper()
	tb := table()
	c := tb.Defaults()
	loaded, err := tb.Load(&c, Sources{Args: args, LookupEnv: env(vars), Output: &strings.Builder{},
		Command: "t", ConfigFlag: "config", ConfigEnv: "T_CONFIG"})
	return c, loaded, err
}

// TestConfigFileMustBeSmallAndRegular: a FIFO (which would block the
// start for ever), a device (which would be read without end), a file
// above MaxFileBytes and a file of two YAML documents are refused with a
// message naming the file, at once.
func TestConfigFileMustBeSmallAndRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("name: "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	twoDocs := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(twoDocs, []byte("name: a\n---\nlevel: bogus\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "is not a regular file"},
		{"/dev/zero", "is not a regular file"},
		{dir, "is not a regular file"},
		{big, "above the 1048576 a config file may hold"},
		{twoDocs, "two.yaml:2: a second YAML document"},
	} {
		done := make(chan error, 1)
		go func() {
			_, _, err := loadWith(t, []string{"--config", tc.path}, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("--config %s: %v; want an error saying %q", tc.path, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("--config %s: still reading after 10 s", tc.path)
		}
	}
}

// TestOldAndNewNameBothGiven: a setting given under its name and its old
// name, on the command line or in the environment, is an error naming
// both, never one silently winning.
func TestOldAndNewNameBothGiven(t *testing.T) {
	for _, args := range [][]string{{"--old-count", "5", "--count", "7"}, {"--count", "7", "--old-count", "5"}} {
		if _, _, err := loadWith(t, args, nil); err == nil || !strings.Contains(err.Error(), "name the same setting") {
			t.Errorf("%v: %v; want both names refused", args, err)
		}
	}
	_, _, err := loadWith(t, nil, map[string]string{"T_OLD_COUNT": "abc", "T_COUNT": "7"})
	if err == nil || !strings.Contains(err.Error(), "T_COUNT and T_OLD_COUNT name the same setting") {
		t.Errorf("both variables set: %v; want both names refused", err)
	}
	if c, _, err := loadWith(t, []string{"--count", "7", "--count", "8"}, nil); err != nil || c.Count != 8 {
		t.Errorf("one flag given twice: %+v, %v; want the last value", c, err)
	}
}
