package main

import (
	"bufio"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/mobile"
)

// deviceInfoTool is the tool every `toolgate connect` offers.
const deviceInfoTool = "device_info"

// deviceInfo is what device_info answers. Memory and uptime are read from
// /proc on Linux and left out elsewhere.
type deviceInfo struct {
	Hostname         string  `json:"hostname"`
	OS               string  `json:"os"`
	Arch             string  `json:"arch"`
	CPUs             int     `json:"cpus"`
	Kernel           string  `json:"kernel,omitempty"`
	MemoryTotalBytes int64   `json:"memory_total_bytes,omitempty"`
	MemoryAvailBytes int64   `json:"memory_available_bytes,omitempty"`
	UptimeSeconds    float64 `json:"uptime_seconds,omitempty"`
}

// registerDeviceInfo offers device_info with its handler.
func registerDeviceInfo(client *mobile.Client) error {
	opts := mobile.NewToolOptions()
	opts.ReadOnly = true
	err := client.RegisterToolWithOptions(deviceInfoTool,
		"Get information about this computer: host name, operating system, architecture, CPU count, memory and uptime.",
		`{"type":"object","properties":{},"required":[]}`, opts)
	if err != nil {
		return err
	}
	client.SetToolHandler(deviceInfoTool, deviceInfoHandler{})
	return nil
}

// deviceInfoHandler answers device_info.
type deviceInfoHandler struct{}

// HandleCall reads the device's information.
func (deviceInfoHandler) HandleCall(*mobile.Call) (string, error) {
	b, err := json.Marshal(readDeviceInfo("/proc"))
	return string(b), err
}

// readDeviceInfo gathers the information, reading /proc under procRoot.
func readDeviceInfo(procRoot string) deviceInfo {
	info := deviceInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	info.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile(procRoot + "/sys/kernel/osrelease"); err == nil {
		info.Kernel = strings.TrimSpace(string(b))
	}
	if mem, err := readMeminfo(procRoot + "/meminfo"); err == nil {
		info.MemoryTotalBytes = mem["MemTotal"]
		info.MemoryAvailBytes = mem["MemAvailable"]
	}
	if b, err := os.ReadFile(procRoot + "/uptime"); err == nil {
		if fields := strings.Fields(string(b)); len(fields) > 0 {
			info.UptimeSeconds, _ = strconv.ParseFloat(fields[0], 64)
		}
	}
	return info
}

// readMeminfo returns /proc/meminfo's values in bytes.
func readMeminfo(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	values := map[string]int64{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		name, rest, ok := strings.Cut(scanner.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		values[name] = n
	}
	return values, scanner.Err()
}
