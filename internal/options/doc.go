package options

import (
	"fmt"
	"strings"
)

// Markdown writes the reference of the options: intro, then a table per
// group (flag, variable, file key, default, values, description), then
// the old names still accepted.
func (t Table[C]) Markdown(intro string) string {
	var b strings.Builder
	b.WriteString(intro)
	group := ""
	for i := range t {
		o := &t[i]
		if o.Group != group {
			group = o.Group
			fmt.Fprintf(&b, "\n## %s\n\n", group)
			b.WriteString("| Flag | Environment variable | File key | Default | Values | Description |\n")
			b.WriteString("|---|---|---|---|---|---|\n")
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | `%s` | %s | %s | %s |\n", o.Name, o.Env, o.Key,
			cell(o.DefaultText()), cell(o.Accepts()), cell(o.Help))
	}
	var aliases []string
	for i := range t {
		for _, a := range t[i].Aliases {
			aliases = append(aliases, fmt.Sprintf("| `--%s`, `%s`, `%s` | `--%s`, `%s`, `%s` |\n", a.Name, a.Env, a.Key, t[i].Name, t[i].Env, t[i].Key))
		}
	}
	if len(aliases) > 0 {
		b.WriteString("\n## Old names\n\nThese names still work for one more release; using one logs a warning naming the new one.\n\n")
		b.WriteString("| Old name (flag, variable, file key) | New name |\n|---|---|\n")
		for _, a := range aliases {
			b.WriteString(a)
		}
	}
	return b.String()
}

// cell makes text safe in a Markdown table cell.
func cell(s string) string {
	s = strings.NewReplacer("|", `\|`, "*", `\*`, "<", "&lt;", ">", "&gt;").Replace(s)
	return strings.ReplaceAll(s, "\n", " ")
}
