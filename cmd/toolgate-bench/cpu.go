package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/cputime"
)

// The parts of a system whose CPU time a load measures, as named in the
// figures: <role>_cpu_us_per_call_<n> (in-process callers) and
// http_<role>_cpu_us_per_call_<n> (callers over HTTP).
const (
	// roleGateway is the process serving the calls: the gateway, the
	// baseline or the echo server. In-process it is this process, so its
	// figure also holds the callers' work.
	roleGateway = "gateway"
	// roleClient is the clients' process.
	roleClient = "client"
	// roleCaller is this process while it only calls (over HTTP).
	roleCaller = "caller"
)

// cpuMeter reads the CPU time one process has used so far.
type cpuMeter struct {
	role string                        // roleGateway, roleClient or roleCaller
	read func() (time.Duration, error) // the process's user and system time so far
}

// selfCPU measures this process.
func selfCPU(role string) cpuMeter {
	return cpuMeter{role: role, read: func() (time.Duration, error) { return cputime.Process(), nil }}
}

// pidCPU measures another process.
func pidCPU(role string, pid int) cpuMeter {
	return cpuMeter{role: role, read: func() (time.Duration, error) { return processCPU(pid) }}
}

// clockTicksPerSecond is the unit of /proc/PID/stat's times (USER_HZ),
// 100 on every Linux architecture Go supports. (The harness runs on Linux
// only: it also reads /proc for memory and has its children killed with
// the harness by Pdeathsig.)
const clockTicksPerSecond = 100

// processCPU returns the user and system time a process and all its
// threads have used, from /proc/PID/stat (in clock ticks of 10 ms: over a
// measurement of seconds, a fraction of a per cent).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime, the 14th and 15th fields of a
// /proc/PID/stat line. The second field, the command name in parentheses,
// may hold spaces and parentheses itself, so fields are counted after the
// last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat line %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat times: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// readCPU reads every meter.
func readCPU(meters []cpuMeter) ([]time.Duration, error) {
	out := make([]time.Duration, len(meters))
	for i, m := range meters {
		d, err := m.read()
		if err != nil {
			return nil, fmt.Errorf("CPU time of the %s: %w", m.role, err)
		}
		out[i] = d
	}
	return out, nil
}
