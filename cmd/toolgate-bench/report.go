package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// collector keeps every round's value of every figure. The scope is a
// system, or "" for the figures that are not per system.
type collector struct {
	vals  map[string]map[string][]float64
	order []string // metrics in the order first seen, for the table
}

func newCollector() *collector { return &collector{vals: map[string]map[string][]float64{}} }

func (c *collector) add(scope, metric string, v float64) {
	if c.vals[scope] == nil {
		c.vals[scope] = map[string][]float64{}
	}
	seen := false
	for _, m := range c.order {
		seen = seen || m == metric
	}
	if !seen {
		c.order = append(c.order, metric)
	}
	c.vals[scope][metric] = append(c.vals[scope][metric], v)
}

// summary is one figure over its rounds.
type summary struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Rounds []float64 `json:"rounds"`
}

func summarize(v []float64) summary {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{Median: med, Min: s[0], Max: s[len(s)-1], Rounds: v}
}

// machineInfo describes where the run happened.
type machineInfo struct {
	Cores       int     `json:"cores"`
	MemoryBytes int64   `json:"memory_bytes"`
	CPUModel    string  `json:"cpu_model"`
	GoVersion   string  `json:"go_version"`
	OS          string  `json:"os"`
	Date        string  `json:"date"`
	LoadAvg1m   float64 `json:"load_average_1m_at_start"`
	Note        string  `json:"note,omitempty"`
}

func readMachine(note string) machineInfo {
	m := machineInfo{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		Date: time.Now().UTC().Format(time.RFC3339), Note: note}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(rest); len(f) == 2 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					m.MemoryBytes = kb * 1024
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAvg1m, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return m
}

// results builds results.json: per system the medians of its figures,
// the figures that are not per system at the top, the machine, and under
// "detail" every figure's median, min, max and rounds.
func (c *collector) results(machine machineInfo, cfg *config) map[string]any {
	out := map[string]any{}
	detail := map[string]any{}
	for scope, metrics := range c.vals {
		meds := map[string]float64{}
		det := map[string]summary{}
		for m, v := range metrics {
			s := summarize(v)
			meds[m], det[m] = s.Median, s
		}
		if scope == "" {
			for m, v := range meds {
				out[m] = v
			}
			detail["top_level"] = det
			continue
		}
		out[scope] = meds
		detail[scope] = det
	}
	out["machine"] = machine
	out["detail"] = detail
	out["config"] = cfg
	return out
}

// writeResults writes results.json, creating its folder.
func writeResults(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// unit names the unit of a figure in the table.
func unit(metric string) string {
	switch {
	case strings.Contains(metric, "_cpu_us_per_call_"):
		return "µs CPU"
	case strings.HasSuffix(metric, "_us"), strings.Contains(metric, "_us_"):
		return "µs"
	case strings.HasSuffix(metric, "_ms"):
		return "ms"
	case strings.Contains(metric, "calls_per_s"):
		return "calls/s"
	case strings.HasSuffix(metric, "_bytes"), strings.Contains(metric, "_bytes_"):
		return "bytes"
	}
	return ""
}

// printTable writes the figures as a Markdown table: per system the
// median with [min–max] over the rounds, and its ratio to the baseline.
func (c *collector) printTable(w io.Writer, machine machineInfo, rounds int) {
	fmt.Fprintf(w, "machine: %d cores, %.1f GiB, %s, %s, %s; load average at start %.2f\n",
		machine.Cores, float64(machine.MemoryBytes)/(1<<30), machine.CPUModel, machine.GoVersion, machine.Date, machine.LoadAvg1m)
	if machine.Note != "" {
		fmt.Fprintf(w, "note: %s\n", machine.Note)
	}
	fmt.Fprintf(w, "median [min–max] over %d rounds; (×n) is the ratio to websocket_baseline\n\n", rounds)
	fmt.Fprintf(w, "| figure | %s |\n|---|%s\n", strings.Join(systems, " | "), strings.Repeat("---|", len(systems)))
	for _, m := range c.order {
		var cells []string
		any := false
		base, hasBase := c.vals[sysBaseline][m]
		for _, sys := range systems {
			v, ok := c.vals[sys][m]
			if !ok {
				cells = append(cells, "")
				continue
			}
			any = true
			s := summarize(v)
			cell := fmt.Sprintf("%s [%s–%s]", num(s.Median), num(s.Min), num(s.Max))
			if hasBase && sys != sysBaseline {
				if b := summarize(base).Median; b != 0 {
					cell += fmt.Sprintf(" (×%.2f)", s.Median/b)
				}
			}
			cells = append(cells, cell)
		}
		if any {
			fmt.Fprintf(w, "| %s (%s) | %s |\n", m, unit(m), strings.Join(cells, " | "))
		}
	}
	fmt.Fprintln(w)
	for _, m := range c.order {
		if v, ok := c.vals[""][m]; ok {
			s := summarize(v)
			fmt.Fprintf(w, "%s: %s [%s–%s] %s\n", m, num(s.Median), num(s.Min), num(s.Max), unit(m))
		}
	}
}

// num formats a figure with the precision it deserves.
func num(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
