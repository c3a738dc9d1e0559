package toolgate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The limits of what validating a call's args against a tool's schema can
// cost, checked (with the other parameters limits) before the schema is
// compiled: the schema validator cannot be stopped once it runs, so a
// schema whose validation could run long is refused up front.
const (
	// MaxSchemaEvaluations bounds the subschema evaluations that one path
	// of an instance (the top-level args, one member of it, one member of
	// that, and so on down to MaxJSONDepth) can cause. $ref lets a small
	// schema describe a graph whose unfolded size is exponential (20
	// anyOf levels of two $refs each: a million evaluations of {}), and
	// the validator walks it all; real tool schemas need a few hundred at
	// most (a recursive tree type, followed to MaxJSONDepth, included).
	MaxSchemaEvaluations = 2000
	// MaxPatternLength is the length of one regular expression of a
	// schema (a pattern, a patternProperties name), in bytes.
	MaxPatternLength = 1024
	// MaxPatternBytes is the length of all the regular expressions of one
	// schema together, in bytes.
	MaxPatternBytes = 16 << 10
	// MaxValidationEvaluations bounds the work of validating one call's
	// args: their values (objects, arrays and scalars) times the
	// evaluations one value may cost (SchemaCost.PerValue). Over it, the
	// call is refused before validating. Each evaluation costs about a
	// microsecond when it fails (BENCHMARKS.md, "Tool schemas: the limits
	// and their worst case").
	MaxValidationEvaluations = 25000
)

// checkSchemaCost refuses a parameters schema (already a valid JSON
// object within the size limits) whose validation could cost more than
// MaxSchemaEvaluations on one instance path, whose $ref points outside
// it, or whose patterns are over MaxPatternLength or MaxPatternBytes.
//
// The bound is a count of walks through the schema graph, $refs resolved
// inside the document ($defs, JSON pointers, $id and $anchor): the
// keywords that apply to the same instance (allOf, anyOf, oneOf, not,
// if/then/else, $ref, dependentSchemas…) add their subschemas' counts,
// the ones that apply to a member or an item (properties, items,
// additionalProperties, contains…) add, for the member that costs most,
// their counts one instance level down, and a walk ends at MaxJSONDepth
// levels (args are never deeper). A cycle that consumes no instance
// level never ends and is refused. The count is memoised on (subschema,
// depth): at most MaxParametersNodes·MaxJSONDepth steps.
func checkSchemaCost(raw []byte) error {
	n, err := schemaEvaluations(raw)
	if err != nil {
		return err
	}
	if n > MaxSchemaEvaluations {
		return errCostTooHigh
	}
	return nil
}

// SchemaCost is what validating args against a parameters schema can
// cost, in subschema evaluations (SchemaEvaluations).
type SchemaCost struct {
	// PerPath bounds the evaluations of one path of args (the top-level
	// object, one member of it, one member of that…): the bound
	// MaxSchemaEvaluations applies to.
	PerPath int64
	// PerValue bounds the evaluations of one value of args (an object, an
	// array or a scalar) at whatever level it is: a validation costs at
	// most PerValue times the number of values in args. It is at most
	// PerPath, and much less for a recursive schema (each level of a
	// recursion costs its own few evaluations, not the path's).
	PerValue int64
}

// SchemaEvaluations bounds the cost of validating args against a
// parameters schema (one that passed CheckToolParameters), or says why it
// cannot (the refusals of CheckToolParameters' cost check).
func SchemaEvaluations(raw []byte) (SchemaCost, error) {
	g, root, err := costGraph(raw)
	if err != nil {
		return SchemaCost{}, err
	}
	perPath, err := g.walks(root, MaxJSONDepth-1)
	if err != nil {
		return SchemaCost{}, err
	}
	return SchemaCost{PerPath: perPath, PerValue: max(root.here, root.deep[MaxJSONDepth-1])}, nil
}

// schemaEvaluations is checkSchemaCost's bound of a schema, or why it is
// refused (errCostTooHigh once the count passes MaxSchemaEvaluations).
func schemaEvaluations(raw []byte) (int64, error) {
	g, root, err := costGraph(raw)
	if err != nil {
		return 0, err
	}
	return g.walks(root, MaxJSONDepth-1) // the args object is the first level
}

// costGraph reads raw into its schema graph and resolves its root.
func costGraph(raw []byte) (*schemaGraph, *schemaNode, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("is not JSON: %v", err)
	}
	g := newSchemaGraph(doc)
	if g.err != nil {
		return nil, nil, g.err
	}
	root, err := g.node("", g.rootBase)
	if err != nil {
		return nil, nil, err
	}
	return g, root, nil
}

// errCostTooComplex is the refusal of a schema whose count would itself
// take too long.
var errCostTooComplex = fmt.Errorf("is too intricate to bound the cost of checking args against it ($ref and combinators over many subschemas); simplify it")

// errCostTooHigh is the refusal of a schema over MaxSchemaEvaluations.
var errCostTooHigh = fmt.Errorf("could cost more than %d subschema evaluations to check one path of args ($ref or anyOf/allOf/oneOf multiplying, or recursion that does not go through properties or items); simplify it", MaxSchemaEvaluations)

// schemaGraph is a parameters schema's document with its resources
// ($id), anchors and patterns indexed, and the subschemas reached so far.
type schemaGraph struct {
	doc      any
	rootBase string
	// resources are the documents' resources by their URL (no fragment):
	// the JSON pointer of each's root in doc.
	resources map[string]string
	// anchors are "URL#name" of $anchor (and a draft-7 "$id": "#name"),
	// $dynamicAnchor and $recursiveAnchor: the JSON pointer of the
	// subschema.
	anchors map[string]string
	// dynamic are the JSON pointers of the subschemas that a
	// $dynamicRef to "#name" may reach ("#name"), and of those a
	// $recursiveRef may reach ("" for $recursiveAnchor: true).
	dynamic map[string][]string
	// bases are the URLs the indexed subschemas are read under, by
	// their JSON pointer.
	bases        map[string]string
	nodes        map[string]*schemaNode
	draft4       bool
	patternBytes int
	work         int // steps of the count so far (maxCostWork)
	err          error
}

// schemaNode is one subschema, its subschemas sorted by how they apply.
type schemaNode struct {
	ptr string
	// same are the subschemas that apply to the same instance.
	same []*schemaNode
	// The subschemas that apply to a member of an object instance.
	properties            map[string]*schemaNode
	patternProperties     []*schemaNode
	additionalProperties  *schemaNode
	unevaluatedProperties *schemaNode
	propertyNames         *schemaNode
	// The subschemas that apply to an item of an array instance.
	prefixItems      []*schemaNode // prefixItems, or an array "items"
	items            *schemaNode   // "items" as one schema
	additionalItems  *schemaNode
	contains         *schemaNode
	unevaluatedItems *schemaNode

	// closure counts the in-place walks from here to each subschema
	// that applies to the same instance (here included), once known.
	closure map[*schemaNode]int64
	// closing is set while closure is being counted.
	closing bool
	// total[d] is the count of walks from here with d instance levels
	// left; 0 while not known.
	total [MaxJSONDepth]int64
	// here is the count of n's closure: the evaluations of the value n
	// applies to (set by walks).
	here int64
	// deep[d] bounds the evaluations of one value at any of the d levels
	// below (set with total[d]): the largest count of one level.
	deep [MaxJSONDepth]int64
}

// defaultSchemaBase is the URL a schema without a top-level $id is read
// under (the gateway compiles it under this one too).
const defaultSchemaBase = "mem://tool/parameters.json"

func newSchemaGraph(doc any) *schemaGraph {
	g := &schemaGraph{doc: doc, rootBase: defaultSchemaBase, resources: map[string]string{},
		anchors: map[string]string{}, dynamic: map[string][]string{}, bases: map[string]string{}, nodes: map[string]*schemaNode{}}
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok && strings.Contains(s, "draft-04") {
			g.draft4 = true
		}
	}
	g.index(doc, "", g.rootBase)
	return g
}

// index records the resources, anchors and patterns of the subschema v at
// ptr, read under base, and of its subschemas.
func (g *schemaGraph) index(v any, ptr, base string) {
	m, ok := v.(map[string]any)
	if !ok || g.err != nil {
		return
	}
	idKey := "$id"
	if g.draft4 {
		idKey = "id"
	}
	if id, ok := m[idKey].(string); ok {
		u, err := resolveURL(base, id)
		if err != nil {
			g.err = fmt.Errorf("has a %s %q that is not a URL", idKey, id)
			return
		}
		if frag := fragmentOf(u); frag != "" && !strings.HasPrefix(frag, "/") {
			g.anchors[withoutFragment(u)+"#"+frag] = ptr // a draft-7 anchor
		} else {
			base = withoutFragment(u)
			g.resources[base] = ptr
		}
	}
	if ptr == "" {
		g.resources[base] = ""
		g.rootBase = base
	}
	g.bases[ptr] = base
	if a, ok := m["$anchor"].(string); ok {
		g.anchors[base+"#"+a] = ptr
	}
	if a, ok := m["$dynamicAnchor"].(string); ok {
		g.anchors[base+"#"+a] = ptr
		g.dynamic["#"+a] = append(g.dynamic["#"+a], ptr)
	}
	if b, ok := m["$recursiveAnchor"].(bool); ok && b {
		g.dynamic[""] = append(g.dynamic[""], ptr)
	}
	if p, ok := m["pattern"].(string); ok {
		g.addPattern(p, ptr+"/pattern")
	}
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		for p := range pp {
			g.addPattern(p, ptr+"/patternProperties")
		}
	}
	for key, sub := range m {
		switch key {
		case "not", "if", "then", "else", "additionalProperties", "propertyNames", "additionalItems",
			"contains", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items":
			if arr, ok := sub.([]any); ok && key == "items" {
				for i, s := range arr {
					g.index(s, ptr+"/items/"+strconv.Itoa(i), base)
				}
				continue
			}
			g.index(sub, ptr+"/"+key, base)
		case "allOf", "anyOf", "oneOf", "prefixItems":
			arr, _ := sub.([]any)
			for i, s := range arr {
				g.index(s, ptr+"/"+key+"/"+strconv.Itoa(i), base)
			}
		case "properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions":
			obj, _ := sub.(map[string]any)
			for name, s := range obj {
				g.index(s, ptr+"/"+key+"/"+escapePointerToken(name), base)
			}
		}
	}
}

// addPattern counts one of the schema's regular expressions against
// MaxPatternLength and MaxPatternBytes.
func (g *schemaGraph) addPattern(p, where string) {
	if g.err != nil {
		return
	}
	if len(p) > MaxPatternLength {
		g.err = fmt.Errorf("has a pattern of %d bytes at %s; the limit is %d", len(p), where, MaxPatternLength)
		return
	}
	g.patternBytes += len(p)
	if g.patternBytes > MaxPatternBytes {
		g.err = fmt.Errorf("has more than %d bytes of patterns", MaxPatternBytes)
	}
}

// node returns the subschema at the JSON pointer ptr of the document,
// read under base, its subschemas resolved.
func (g *schemaGraph) node(ptr, base string) (*schemaNode, error) {
	if n, ok := g.nodes[ptr]; ok {
		return n, nil
	}
	v, ok := lookupPointer(g.doc, ptr)
	if !ok {
		return nil, fmt.Errorf("has a $ref to %q, which it does not hold", "#"+ptr)
	}
	n := &schemaNode{ptr: ptr}
	g.nodes[ptr] = n
	m, ok := v.(map[string]any)
	if !ok {
		return n, nil // a boolean schema (anything else does not compile)
	}
	if b, ok := g.bases[ptr]; ok {
		base = b
	}
	at := func(key string) (*schemaNode, error) { return g.node(ptr+"/"+key, base) }
	one := func(key string) ([]*schemaNode, error) {
		if _, ok := m[key]; !ok {
			return nil, nil
		}
		if _, isArr := m[key].([]any); isArr {
			return nil, nil
		}
		c, err := at(key)
		if err != nil {
			return nil, err
		}
		return []*schemaNode{c}, nil
	}
	list := func(key string) ([]*schemaNode, error) {
		arr, _ := m[key].([]any)
		out := make([]*schemaNode, 0, len(arr))
		for i := range arr {
			c, err := at(key + "/" + strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	members := func(key string, keep func(any) bool) ([]*schemaNode, []string, error) {
		obj, _ := m[key].(map[string]any)
		var out []*schemaNode
		var names []string
		for name, s := range obj {
			if keep != nil && !keep(s) {
				continue
			}
			c, err := at(key + "/" + escapePointerToken(name))
			if err != nil {
				return nil, nil, err
			}
			out = append(out, c)
			names = append(names, name)
		}
		return out, names, nil
	}
	isSchema := func(s any) bool {
		switch s.(type) {
		case map[string]any, bool:
			return true
		}
		return false
	}

	var err error
	add := func(dst *[]*schemaNode, got []*schemaNode, e error) {
		if err == nil {
			err = e
		}
		*dst = append(*dst, got...)
	}
	// The subschemas that apply to the instance itself.
	for _, key := range []string{"not", "if", "then", "else"} {
		got, e := one(key)
		add(&n.same, got, e)
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		got, e := list(key)
		add(&n.same, got, e)
	}
	for _, key := range []string{"dependentSchemas", "dependencies"} {
		got, _, e := members(key, isSchema)
		add(&n.same, got, e)
	}
	for _, key := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		ref, ok := m[key].(string)
		if !ok {
			continue
		}
		got, e := g.refTargets(key, ref, base)
		add(&n.same, got, e)
	}
	if err != nil {
		return nil, err
	}

	// The subschemas that apply to a member or an item.
	single := func(key string) (*schemaNode, error) {
		got, err := one(key)
		if err != nil || len(got) == 0 {
			return nil, err
		}
		return got[0], nil
	}
	props, propNames, e1 := members("properties", nil)
	patterns, _, e2 := members("patternProperties", nil)
	prefix, e3 := list("prefixItems")
	itemsList, e4 := list("items")
	if err := firstError(e1, e2, e3, e4); err != nil {
		return nil, err
	}
	n.properties = map[string]*schemaNode{}
	for i, name := range propNames {
		n.properties[name] = props[i]
	}
	n.patternProperties = patterns
	n.prefixItems = append(prefix, itemsList...)
	for key, dst := range map[string]**schemaNode{"additionalProperties": &n.additionalProperties,
		"unevaluatedProperties": &n.unevaluatedProperties, "propertyNames": &n.propertyNames, "items": &n.items,
		"additionalItems": &n.additionalItems, "contains": &n.contains, "unevaluatedItems": &n.unevaluatedItems} {
		if *dst, err = single(key); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// refTargets resolves the $ref, $dynamicRef or $recursiveRef ref read
// under base to the subschemas it may reach: its target, and for the
// dynamic ones every subschema with the same dynamic anchor.
func (g *schemaGraph) refTargets(key, ref, base string) ([]*schemaNode, error) {
	u, err := resolveURL(base, ref)
	if err != nil {
		return nil, fmt.Errorf("has a %s %q that is not a URL", key, ref)
	}
	resPtr, ok := g.resources[withoutFragment(u)]
	if !ok {
		return nil, fmt.Errorf("has a %s %q that points outside it (a tool's schema must be self-contained)", key, ref)
	}
	frag := fragmentOf(u)
	target := resPtr + frag
	if frag != "" && !strings.HasPrefix(frag, "/") {
		if target, ok = g.anchors[withoutFragment(u)+"#"+frag]; !ok {
			return nil, fmt.Errorf("has a %s %q to an anchor it does not define", key, ref)
		}
	}
	var ptrs []string
	ptrs = append(ptrs, target)
	switch key {
	case "$dynamicRef":
		if frag != "" && !strings.HasPrefix(frag, "/") {
			ptrs = append(ptrs, g.dynamic["#"+frag]...)
		}
	case "$recursiveRef":
		ptrs = append(ptrs, g.dynamic[""]...)
	}
	out := make([]*schemaNode, 0, len(ptrs))
	for _, p := range ptrs {
		n, err := g.node(p, withoutFragment(u))
		if err != nil {
			return nil, fmt.Errorf("has a %s %q to a place it does not hold", key, ref)
		}
		out = append(out, n)
	}
	return out, nil
}

// countClosure counts n's in-place walks (its closure), refusing a
// cycle and a count over MaxSchemaEvaluations.
func (g *schemaGraph) countClosure(n *schemaNode) (map[*schemaNode]int64, error) {
	if n.closure != nil {
		return n.closure, nil
	}
	if n.closing {
		return nil, errCostTooHigh // a cycle that consumes no instance level
	}
	n.closing = true
	closure := map[*schemaNode]int64{n: 1}
	var here int64 = 1
	for _, c := range n.same {
		sub, err := g.countClosure(c)
		if err != nil {
			return nil, err
		}
		for m, k := range sub {
			closure[m] += k
			if here += k; here > MaxSchemaEvaluations {
				return nil, errCostTooHigh
			}
		}
		if g.work += len(sub); g.work > maxCostWork {
			return nil, errCostTooComplex
		}
	}
	n.closing = false
	n.closure = closure
	return closure, nil
}

// maxCostWork bounds the steps of checkSchemaCost's count, so that the
// check itself stays in milliseconds.
const maxCostWork = 1 << 22

// walks counts the evaluations that one instance path can cause from n
// with depth instance levels left: those of n's closure at this level,
// plus, for the member (or item) that costs most, the walks of every
// subschema of the closure that applies to it, one level down. The
// members are told apart by name (a name some properties lists; any
// other; an item's index), so the variants of an anyOf that each take
// their own property add up only for that property. It refuses a count
// over MaxSchemaEvaluations.
func (g *schemaGraph) walks(n *schemaNode, depth int) (int64, error) {
	if c := n.total[depth]; c > 0 {
		return c, nil
	}
	closure, err := g.countClosure(n)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, k := range closure {
		total += k
	}
	here := total // the evaluations of the value at this level
	if depth > 0 {
		// The members told apart: each name some properties lists, and
		// any other; each index some prefixItems lists, and any other.
		names := map[string]bool{}
		longest := 0
		for m := range closure {
			for name := range m.properties {
				names[name] = true
			}
			longest = max(longest, len(m.prefixItems))
		}
		var most, deepest int64
		try := func(applying func(m *schemaNode) []*schemaNode) error {
			// next counts the member's own evaluations, below those
			// of the levels under it: a bound on each level's sum.
			var sum, next, below int64
			for m, k := range closure {
				for _, c := range applying(m) {
					if c == nil {
						continue
					}
					w, err := g.walks(c, depth-1)
					if err != nil {
						return err
					}
					if sum += k * w; sum > MaxSchemaEvaluations {
						return errCostTooHigh
					}
					next += k * c.here // at most k·w
					below += k * c.deep[depth-1]

				}
			}
			if g.work += len(closure); g.work > maxCostWork {
				return errCostTooComplex
			}
			most = max(most, sum)
			deepest = max(deepest, next, below)
			return nil
		}
		objectMember := func(name string, named bool) func(m *schemaNode) []*schemaNode {
			return func(m *schemaNode) []*schemaNode {
				first := m.additionalProperties
				if p, ok := m.properties[name]; ok && named {
					first = p
				}
				return append([]*schemaNode{first, m.unevaluatedProperties}, m.patternProperties...)
			}
		}
		arrayItem := func(i int) func(m *schemaNode) []*schemaNode {
			return func(m *schemaNode) []*schemaNode {
				first := m.additionalItems
				if i < len(m.prefixItems) {
					first = m.prefixItems[i]
				}
				return []*schemaNode{first, m.items, m.contains, m.unevaluatedItems}
			}
		}
		for name := range names {
			if err := try(objectMember(name, true)); err != nil {
				return 0, err
			}
		}
		if err := try(objectMember("", false)); err != nil {
			return 0, err
		}
		if err := try(func(m *schemaNode) []*schemaNode { return []*schemaNode{m.propertyNames} }); err != nil {
			return 0, err
		}
		for i := 0; i <= longest; i++ {
			if err := try(arrayItem(i)); err != nil {
				return 0, err
			}
		}
		if total += most; total > MaxSchemaEvaluations {
			return 0, errCostTooHigh
		}
		n.deep[depth] = deepest
	}
	n.here = here
	n.total[depth] = total
	return total, nil
}

// firstError returns the first of errs that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// resolveURL resolves ref against base.
func resolveURL(base, ref string) (*url.URL, error) {
	b, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	return b.ResolveReference(r), nil
}

// fragmentOf is u's fragment, unescaped.
func fragmentOf(u *url.URL) string { return u.Fragment }

// withoutFragment is u without its fragment.
func withoutFragment(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

// escapePointerToken escapes a member name as a JSON Pointer token.
func escapePointerToken(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// lookupPointer returns the value at the JSON pointer ptr of doc.
func lookupPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}
