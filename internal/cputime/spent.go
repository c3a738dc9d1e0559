package cputime

import (
	"runtime"
	"time"
)

// Spent runs fn on the calling goroutine, locked to its OS thread, and
// returns the CPU time that thread used meanwhile (0 where Thread cannot
// tell): the work fn cost, whatever else the machine was doing.
func Spent(fn func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := Thread()
	fn()
	return Thread() - start
}
