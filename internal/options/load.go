package options

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Table is a program's options, in the order help and docs list them.
type Table[C any] []Option[C]

// Defaults returns a C with every option's default set. A default that
// does not parse is a mistake in the table and panics (a test catches it).
func (t Table[C]) Defaults() C {
	var c C
	for i := range t {
		if _, err := t[i].Set(&c, t[i].Default); err != nil {
			panic(fmt.Sprintf("option --%s: default %q: %v", t[i].Name, t[i].Default, err))
		}
	}
	return c
}

// Check reports every value of c outside its option's range, all at
// once. from, when not nil, says where an option's value was given
// (Loaded.From), named in its error.
func (t Table[C]) Check(c *C, from map[string]string) []error {
	var errs []error
	for i := range t {
		if err := t[i].Check(c); err != nil {
			if w := from[t[i].Name]; w != "" && w != "--"+t[i].Name {
				err = fmt.Errorf("%w (given by %s)", err, w)
			}
			errs = append(errs, err)
		}
	}
	return errs
}

// Loaded is what Load read besides the values.
type Loaded struct {
	// Warnings name the old names and old spellings used, and what to
	// write instead.
	Warnings []string
	// From says where each option given was read (by option name): a
	// flag, a variable, or a file's line and key.
	From map[string]string
}

// Sources says where Load reads settings from.
type Sources struct {
	Args      []string                    // the command line after the command's name
	LookupEnv func(string) (string, bool) // os.LookupEnv, or a test's
	Command   string                      // e.g. "toolgate serve", for help
	// ConfigFlag and ConfigEnv name the flag and variable that give the
	// config file ("config", "TOOLGATE_CONFIG").
	ConfigFlag, ConfigEnv string
	Output                io.Writer // where -h prints; os.Stderr when nil
	// Flags, when set, adds the command's own flags, which are not
	// settings (no variable, no file key): toolgate backup's --to.
	Flags func(fs *flag.FlagSet)
	// OtherKeys, when set, says which file keys are settings of another
	// command reading the same file (toolgate serve's, when toolgate
	// backup reads its --config): skipped rather than refused as unknown.
	OtherKeys func(key string) bool
}

// Only returns the options of t named, in t's order: a command that
// reads some of another's settings, under the same names.
func (t Table[C]) Only(names ...string) Table[C] {
	var out Table[C]
	for _, o := range t {
		for _, name := range names {
			if o.Name == name {
				out = append(out, o)
			}
		}
	}
	return out
}

// HasKey reports whether key is the file key of an option of t, or an
// old key of one.
func (t Table[C]) HasKey(key string) bool {
	opt, _ := t.byKey(key)
	return opt >= 0
}

// given is one value and where it came from.
type given struct {
	opt   int
	raw   string
	where string // "--flag", "VAR", "file.yaml:7: key"
}

// Load sets in c each option given in the config file, the environment
// and on the command line, in that order, so that a flag wins over its
// variable and the variable over the file; options given nowhere keep
// what c held (start from Defaults). It returns the warnings of old
// names and old spellings, and every value that could not be read,
// joined; flag.ErrHelp when -h was asked. Ranges are not checked here:
// Check does that, once the whole configuration is known.
func (t Table[C]) Load(c *C, src Sources) (Loaded, error) {
	if src.LookupEnv == nil {
		src.LookupEnv = os.LookupEnv
	}
	fromFlags, configPath, err := t.parseFlags(src)
	if err != nil {
		return Loaded{}, err
	}
	var warnings []string
	var all []given
	var errs []error
	if configPath == "" && src.ConfigEnv != "" {
		configPath, _ = src.LookupEnv(src.ConfigEnv)
	}
	if configPath != "" {
		vals, w, fileErrs := t.readFile(configPath, src.OtherKeys)
		all, warnings, errs = append(all, vals...), append(warnings, w...), append(errs, fileErrs...)
	}
	vals, w, envErrs := t.fromEnv(src.LookupEnv)
	all, warnings, errs = append(all, vals...), append(warnings, w...), append(errs, envErrs...)
	for _, g := range fromFlags {
		if g.where != "--"+t[g.opt].Name {
			warnings = append(warnings, fmt.Sprintf("%s is an old name kept for one more release: say --%s", g.where, t[g.opt].Name))
		}
	}
	all = append(all, fromFlags...)
	from := map[string]string{}
	for _, g := range all {
		from[t[g.opt].Name] = g.where
		w, err := t[g.opt].Set(c, g.raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", g.where, err))
			continue
		}
		if w != "" {
			warnings = append(warnings, g.where+": "+w)
		}
	}
	return Loaded{Warnings: warnings, From: from}, errors.Join(errs...)
}

// flagValue records what one flag (an option's or an alias's) was given.
type flagValue struct {
	opt   int
	name  string
	lines bool
	out   *[]given
}

// String implements flag.Value.
func (f *flagValue) String() string { return "" }

// Set implements flag.Value: a repeatable list adds a line, anything
// else replaces the value given before.
func (f *flagValue) Set(raw string) error {
	where := "--" + f.name
	for i, g := range *f.out {
		if g.opt == f.opt {
			if g.where != where {
				return fmt.Errorf("%s and %s name the same setting (one is its old name): give one", g.where, where)
			}
			if f.lines {
				(*f.out)[i].raw += "\n" + raw
			} else {
				(*f.out)[i] = given{opt: f.opt, raw: raw, where: where}
			}
			return nil
		}
	}
	*f.out = append(*f.out, given{opt: f.opt, raw: raw, where: where})
	return nil
}

// parseFlags reads the command line: the options given and the config
// file named.
func (t Table[C]) parseFlags(src Sources) ([]given, string, error) {
	out := src.Output
	if out == nil {
		out = os.Stderr
	}
	fs := flag.NewFlagSet(src.Command, flag.ContinueOnError)
	fs.SetOutput(out)
	var vals []given
	var configPath string
	if src.ConfigFlag != "" {
		fs.StringVar(&configPath, src.ConfigFlag, "", "")
	}
	var zero C
	for i := range t {
		_, lines := t[i].Field(&zero).(Lines)
		fs.Var(&flagValue{opt: i, name: t[i].Name, lines: lines, out: &vals}, t[i].Name, t[i].Help)
		for _, a := range t[i].Aliases {
			if a.Name != "" {
				fs.Var(&flagValue{opt: i, name: a.Name, lines: lines, out: &vals}, a.Name, "")
			}
		}
	}
	if src.Flags != nil {
		src.Flags(fs)
	}
	fs.Usage = func() { t.WriteUsage(out, src) }
	if err := fs.Parse(src.Args); err != nil {
		return nil, "", err
	}
	if fs.NArg() > 0 {
		return nil, "", fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return vals, configPath, nil
}

// fromEnv reads the options' variables, and their old names' with a
// warning; a variable and its old name both set is an error.
func (t Table[C]) fromEnv(lookup func(string) (string, bool)) ([]given, []string, []error) {
	var vals []given
	var warnings []string
	var errs []error
	for i := range t {
		var found *given
		if v, ok := lookup(t[i].Env); ok && t[i].Env != "" {
			found = &given{opt: i, raw: v, where: t[i].Env}
		}
		for _, a := range t[i].Aliases {
			v, ok := lookup(a.Env)
			if !ok || a.Env == "" {
				continue
			}
			if found != nil {
				errs = append(errs, fmt.Errorf("%s and %s name the same setting (one is its old name): set one", found.where, a.Env))
				break
			}
			found = &given{opt: i, raw: v, where: a.Env}
			warnings = append(warnings, fmt.Sprintf("%s is an old name kept for one more release: say %s", a.Env, t[i].Env))
		}
		if found != nil {
			vals = append(vals, *found)
		}
	}
	return vals, warnings, errs
}

// WriteUsage writes the help of the options, grouped, each with the
// values it takes, its default, its variable and its file key.
func (t Table[C]) WriteUsage(w io.Writer, src Sources) {
	fmt.Fprintf(w, "usage: %s [flags]\n\n", src.Command)
	if src.Flags != nil {
		own := flag.NewFlagSet(src.Command, flag.ContinueOnError)
		src.Flags(own)
		own.SetOutput(w)
		own.PrintDefaults()
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Every setting is a flag, an environment variable and a key of the --%s file (YAML):\n", src.ConfigFlag)
	fmt.Fprintf(w, "a flag wins over its variable, the variable over the file, the file over the default.\n\n")
	fmt.Fprintf(w, "  --%s FILE\n    \tYAML file of settings, keys as listed below; an unknown key is an error (env %s)\n", src.ConfigFlag, src.ConfigEnv)
	group := ""
	for i := range t {
		o := &t[i]
		if o.Group != group {
			group = o.Group
			fmt.Fprintf(w, "\n%s:\n", group)
		}
		fmt.Fprintf(w, "  --%s\n    \t%s\n    \t%s; default %s (env %s; file key %s)\n", o.Name, o.Help, capitalize(o.Accepts()), o.DefaultText(), o.Env, o.Key)
	}
}

// DefaultText is the default as help and docs show it: "unset" for an
// empty one.
func (o *Option[C]) DefaultText() string {
	if o.Default == "" {
		return "unset"
	}
	if o.Unit != "" && o.Unit != "duration" && o.Default != "off" && o.Default != "auto" {
		return o.Default + " " + o.Unit
	}
	return o.Default
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
