package sandbox

import (
	"io"
	"io/fs"
	"os"
	"sync/atomic"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// entryCharge is what creating a file or a directory costs of a call's
// scratch budget, so that a module cannot fill the disk with empty files.
const entryCharge = 4096

// errNoSpace is what a write past the scratch budget fails with. WASI
// preview 1 has ENOSPC, but wazero's file system layer cannot return it;
// EIO is the nearest (the call's error then says the limit was reached).
const errNoSpace = experimentalsys.EIO

// scratchBudget is how many bytes a call may still write to its scratch
// directory; a write past it fails (errNoSpace).
type scratchBudget struct {
	left     atomic.Int64
	exceeded atomic.Bool
}

func newScratchBudget(limit int64) *scratchBudget {
	b := &scratchBudget{}
	b.left.Store(limit)
	return b
}

// charge takes n bytes from the budget, or none and false when fewer are
// left.
func (b *scratchBudget) charge(n int64) bool {
	if n <= 0 {
		return true
	}
	if b.left.Add(-n) < 0 {
		b.left.Add(n)
		b.exceeded.Store(true)
		return false
	}
	return true
}

// newScratchDir makes a fresh, empty directory for one call under root
// (made again if a temporary-file cleaner removed it); the caller
// removes it after the call.
func newScratchDir(root string) (string, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(root, "call-*")
}

// scratchFS is the module's whole file system: the call's scratch
// directory (mounted as "/"), writes counted against the budget. Links
// are refused: a symbolic link is resolved by the host, so one pointing
// at "../../etc/passwd" would reach out of the directory.
type scratchFS struct {
	experimentalsys.FS
	budget *scratchBudget
}

func newScratchFS(dir string, budget *scratchBudget) *scratchFS {
	return &scratchFS{FS: sysfs.DirFS(dir), budget: budget}
}

// OpenFile implements experimentalsys.FS; creating a file is charged.
func (s *scratchFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&experimentalsys.O_CREAT != 0 {
		if _, errno := s.FS.Lstat(path); errno == experimentalsys.ENOENT && !s.budget.charge(entryCharge) {
			return nil, errNoSpace
		}
	}
	f, errno := s.FS.OpenFile(path, flag, perm)
	if errno != 0 {
		return nil, errno
	}
	return &scratchFile{File: f, budget: s.budget}, 0
}

// Mkdir implements experimentalsys.FS; a directory is charged.
func (s *scratchFS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	if !s.budget.charge(entryCharge) {
		return errNoSpace
	}
	return s.FS.Mkdir(path, perm)
}

// Symlink implements experimentalsys.FS: refused.
func (s *scratchFS) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }

// Link implements experimentalsys.FS: refused.
func (s *scratchFS) Link(string, string) experimentalsys.Errno { return experimentalsys.EPERM }

// scratchFile is a file of the scratch directory whose writes are charged.
type scratchFile struct {
	experimentalsys.File
	budget *scratchBudget
}

// Write implements experimentalsys.File: what the file grows by is
// charged (a write past its end, after a seek, grows it by the gap too).
func (f *scratchFile) Write(buf []byte) (int, experimentalsys.Errno) {
	at := int64(-1) // the end: an append
	if !f.File.IsAppend() {
		pos, errno := f.File.Seek(0, io.SeekCurrent)
		if errno != 0 {
			return 0, errno
		}
		at = pos
	}
	if errno := f.chargeGrowth(at, len(buf)); errno != 0 {
		return 0, errno
	}
	return f.File.Write(buf)
}

// Pwrite implements experimentalsys.File: what the file grows by is
// charged, so a write at a huge offset cannot make a file (sparse, but
// of that size for whoever copies it) larger than the budget.
func (f *scratchFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	if errno := f.chargeGrowth(off, len(buf)); errno != 0 {
		return 0, errno
	}
	return f.File.Pwrite(buf, off)
}

// chargeGrowth charges what writing n bytes at offset at (-1: at the
// end) grows the file by: from its size to at+n.
func (f *scratchFile) chargeGrowth(at int64, n int) experimentalsys.Errno {
	st, errno := f.File.Stat()
	if errno != 0 {
		return errno
	}
	if at < 0 {
		at = st.Size
	}
	if at+int64(n) < at {
		return experimentalsys.EINVAL // past the largest offset
	}
	if !f.budget.charge(at + int64(n) - st.Size) {
		return errNoSpace
	}
	return 0
}

// Truncate implements experimentalsys.File; growing a file is charged.
func (f *scratchFile) Truncate(size int64) experimentalsys.Errno {
	st, errno := f.File.Stat()
	if errno != 0 {
		return errno
	}
	if !f.budget.charge(size - st.Size) {
		return errNoSpace
	}
	return f.File.Truncate(size)
}
