package sandbox_test

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/sandbox"
)

// recurse is a WASI command whose _start calls itself without end: the
// runtime grows its native call stack until it reports a stack overflow.
var recurse = commandWith(nil, nil, []byte{0, // no locals
	0x10, 0x00, // call 0 (itself)
	0x0b}) // end

// procStatusKB reads a field (VmRSS, VmHWM) of /proc/self/status, in KiB.
func procStatusKB(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeakRSS makes VmHWM start again from the current RSS.
func resetPeakRSS(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// TestRunawayRecursionMemory: a module that recurses without end grows
// the native call stack wazero keeps on the gateway's heap to ~84 MB
// (~126 MB while it copies it) before its call fails. Each call is
// counted that stack against the memory budget, so 8 calls at once cannot
// take the process far past the budget (without: ~1.1 GB), and what they
// grew is given back to the operating system after the calls (without:
// all of it stays held).
func TestRunawayRecursionMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("RSS bounds do not hold under the race detector (its shadow memory)")
	}
	const calls = 8
	set := openSet(t, func(o *sandbox.Options) {
		o.MaxConcurrent = calls
		o.MemoryBudgetMB = 2*sandbox.StackReserveMB + 20 // two calls at once
	}, func(dir string) {
		writeFile(t, filepath.Join(dir, "recurse.wasm"), recurse)
		writeFile(t, filepath.Join(dir, "recurse.json"), `{"description": "x", "memory_limit_mb": 1}`)
	})
	set.tool(t, "recurse")
	debug.FreeOSMemory()
	before := procStatusKB(t, "VmRSS")
	resetPeakRSS(t)
	var wg sync.WaitGroup
	errs := make([]error, calls)
	for i := range errs {
		wg.Go(func() { _, errs[i] = set.call(t, "recurse", `{}`, 2*time.Minute) })
	}
	wg.Wait()
	for _, err := range errs {
		te := toolError(t, err, sandbox.CodeToolError)
		if !strings.Contains(te.Message, "stack overflow") {
			t.Fatalf("a runaway recursion: %q; want a stack overflow", te.Message)
		}
	}
	peak := procStatusKB(t, "VmHWM")
	t.Logf("RSS before %d MiB, peak %d MiB", before>>10, peak>>10)
	// Two calls' stacks at once, ~270 MiB, and garbage not yet collected.
	if grew := (peak - before) >> 10; grew > 4*sandbox.StackReserveMB {
		t.Errorf("the calls took RSS %d MiB past where it was; want at most twice what two calls' stacks hold, %d MiB", grew, 4*sandbox.StackReserveMB)
	}
	var after int64
	testwait.Until(t, 30*time.Second, "the calls' memory given back to the operating system", func() bool {
		after = procStatusKB(t, "VmRSS")
		return (after-before)>>10 < 64
	})
	t.Logf("RSS after %d MiB (%d frees)", after>>10, set.MemoryFrees())
}
