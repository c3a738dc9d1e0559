//go:build !linux

package cputime

import "time"

// Thread returns 0: this system's per-thread CPU time is not read.
func Thread() time.Duration { return 0 }
