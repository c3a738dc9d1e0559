package options

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// readFile reads a YAML config file: one mapping of option keys to
// values, a list option's value a sequence (or a string as on the
// command line). The table is the file's schema: every key that is no
// option's (nor, with otherKeys, another command's) is an error naming
// the key and its line, and every value carries its line into the errors
// it causes.
func (t Table[C]) readFile(path string, otherKeys func(string) bool) (vals []given, warnings []string, errs []error) {
	data, err := readConfigBytes(path)
	if err != nil {
		return nil, nil, []error{fmt.Errorf("--config: %w", err)}
	}
	var doc yaml.Node
	// Decoded to a node rather than a struct (where KnownFields would
	// catch unknown keys) because the table is the schema: the walk
	// below names each unknown key with its line, and each value's line
	// goes into the errors it causes.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, nil // an empty file sets nothing
		}
		return nil, nil, []error{fmt.Errorf("%s: %v", path, err)}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		line := more.Line
		if err != nil {
			return nil, nil, []error{fmt.Errorf("%s: %v", path, err)}
		}
		return nil, nil, []error{fmt.Errorf("%s:%d: a second YAML document (after ---); the file must hold one mapping of keys to values", path, line)}
	}
	if len(doc.Content) == 0 {
		return nil, nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, []error{fmt.Errorf("%s:%d: the file must be a mapping of keys to values, such as addr: 127.0.0.1:8080", path, root.Line)}
	}
	var zero C
	firstLine := map[int]int{} // option → line it was first given on
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		opt, alias := t.byKey(k.Value)
		where := fmt.Sprintf("%s:%d: %s", path, k.Line, k.Value)
		if opt < 0 && otherKeys != nil && otherKeys(k.Value) {
			continue
		}
		if opt < 0 {
			errs = append(errs, fmt.Errorf("%s:%d: unknown key %q", path, k.Line, k.Value))
			continue
		}
		if line, ok := firstLine[opt]; ok {
			errs = append(errs, fmt.Errorf("%s is given twice (first on line %d)", where, line))
			continue
		}
		firstLine[opt] = k.Line
		if alias {
			warnings = append(warnings, fmt.Sprintf("%s is an old name kept for one more release: say %s", where, t[opt].Key))
		}
		var raw string
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag != "!!null" {
				raw = v.Value
			}
		case yaml.SequenceNode:
			sep := ","
			switch t[opt].Field(&zero).(type) {
			case Lines:
				sep = "\n"
			case *[]string:
			default:
				errs = append(errs, fmt.Errorf("%s: a list is given where one value is wanted", where))
				continue
			}
			var items []string
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					errs = append(errs, fmt.Errorf("%s:%d: %s: each item of the list must be one value", path, item.Line, k.Value))
					continue
				}
				items = append(items, item.Value)
			}
			raw = strings.Join(items, sep)
		default:
			errs = append(errs, fmt.Errorf("%s: a value or a list is wanted, not a mapping", where))
			continue
		}
		vals = append(vals, given{opt: opt, raw: raw, where: where})
	}
	return vals, warnings, errs
}

// byKey finds the option of a file key, or of an old key (alias true);
// -1 when there is none.
func (t Table[C]) byKey(key string) (opt int, alias bool) {
	for i := range t {
		if t[i].Key == key {
			return i, false
		}
	}
	for i := range t {
		for _, a := range t[i].Aliases {
			if a.Key != "" && a.Key == key {
				return i, true
			}
		}
	}
	return -1, false
}

// MaxFileBytes is the largest config file read: far above any real
// configuration, it keeps a wrong path (a device, a log) from being read
// into memory whole.
const MaxFileBytes = 1 << 20

// readConfigBytes reads the config file, which must be a regular file
// (not a directory, a device or a FIFO, which could block or never end)
// of at most MaxFileBytes.
func readConfigBytes(path string) ([]byte, error) {
	// Stat before opening: opening a FIFO blocks until a writer comes.
	if info, err := os.Stat(path); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, info.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, info.Mode().Type())
	}
	if info.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s is %d bytes, above the %d a config file may hold", path, info.Size(), MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s grew above the %d bytes a config file may hold", path, MaxFileBytes)
	}
	return data, nil
}
