//go:build linux

// Package smalldisk gives a test a small disk of its own, to fill: a
// tmpfs mounted on a fresh directory. Mounting needs root (CI runs as
// root); elsewhere the test is skipped with a message saying how to run
// it. It imports "testing", so only _test.go files may import it.
package smalldisk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size (such as "8m") on a fresh directory and
// returns it. It is unmounted when the test ends, after the cleanups
// registered later (a gateway or store using it) have run.
func Mount(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v); this test needs root: sudo go test -run '^%s$' ./PACKAGE (CI runs as root)", err, t.Name())
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// Fill writes a file into dir until its disk has no space left, and
// returns the file's path: deleting the file frees the space.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for size := len(chunk); size > 0; {
		if _, err := f.Write(chunk[:size]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			size /= 2 // the last pages too
		}
	}
	if free := Free(t, dir); free != 0 {
		t.Fatalf("the disk of %s is not full: %d bytes free", dir, free)
	}
	return path
}

// Free returns how many bytes the disk of dir has free.
func Free(t testing.TB, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}
