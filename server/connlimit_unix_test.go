//go:build unix

package server

import (
	"syscall"
	"testing"
)

// The derived limit stays under the file-descriptor limit, which Go has
// raised to the hard limit at start.
func TestConnectionLimitFromFileLimit(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip("no getrlimit here")
	}
	if lim.Cur != lim.Max {
		t.Errorf("the soft limit %d is not the hard %d: Go did not raise it", lim.Cur, lim.Max)
	}
	got := connectionLimit(0)
	if got <= 0 || uint64(got)+connReserveMin > uint64(lim.Cur) && lim.Cur > 200 {
		t.Errorf("derived limit %d leaves no reserve under the file limit %d", got, lim.Cur)
	}
	if connectionLimit(8) != 8 {
		t.Error("a configured limit is not taken as is")
	}
}
