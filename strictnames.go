package toolgate

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// CheckStrictJSONBodyFor is CheckStrictJSONBody for a body decoded into
// a value of shape's type (shape may be a nil pointer of that type). Go's
// encoding/json matches a member name to a struct field case-
// insensitively, with Unicode folding ("TOOL", "Tool" and "ſession_id"
// are read as tool and session_id), and keeps the last of two members it
// reads as one: every member of an object read into a struct must name a
// field exactly. One whose name is a field's in another case is refused,
// naming it, and with that, two members that are one field to the
// decoder. Members read as raw JSON (a call's args) and map keys are read
// case-sensitively by Go and are held to the exact checks only.
func CheckStrictJSONBodyFor(raw []byte, shape any) error {
	_, err := walkJSONTextFor(raw, MaxJSONDepth+bodyDepth, 0, namesOf(reflect.TypeOf(shape)))
	return err
}

// nameSet is the member names a Go type reads from a JSON value: for a
// struct, its fields' names and what each reads; for a map, slice or
// array, what each element reads. A nil *nameSet reads any names (raw
// JSON, an interface, a type with its own UnmarshalJSON, a scalar).
type nameSet struct {
	isStruct bool
	fields   map[string]*nameSet // a struct's exact member names
	list     []string            // the same names, for a case-folding match
	elem     *nameSet            // a map's, slice's or array's elements
}

// member returns what the member named name of an object of s reads, or,
// if s is a struct with no field named name exactly but one named name in
// another case, that field's name as folded.
func (s *nameSet) member(name []byte) (child *nameSet, folded string) {
	if s == nil {
		return nil, ""
	}
	if !s.isStruct {
		return s.elem, ""
	}
	if child, ok := s.fields[string(name)]; ok {
		return child, ""
	}
	// The fold encoding/json matches names with (bytes.EqualFold). An
	// unknown member that folds to no field is left to the decoder
	// (ignored, or refused as unknown).
	for _, f := range s.list {
		if bytes.EqualFold([]byte(f), name) {
			return nil, f
		}
	}
	return nil, ""
}

// nameSets caches namesOf by type.
var nameSets sync.Map // reflect.Type → *nameSet

// namesOf returns the names t reads (nil: any).
func namesOf(t reflect.Type) *nameSet {
	if t == nil {
		return nil
	}
	if s, ok := nameSets.Load(t); ok {
		return s.(*nameSet)
	}
	s := buildNames(t, map[reflect.Type]*nameSet{})
	nameSets.Store(t, s)
	return s
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// buildNames is namesOf without the cache; building holds the structs
// being built, for a type that holds itself.
func buildNames(t reflect.Type, building map[reflect.Type]*nameSet) *nameSet {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // base64
		}
		if elem := buildNames(t.Elem(), building); elem != nil {
			return &nameSet{elem: elem}
		}
		return nil
	case reflect.Struct:
		if s, ok := building[t]; ok {
			return s
		}
		s := &nameSet{isStruct: true, fields: map[string]*nameSet{}}
		building[t] = s
		addFields(s, t, building)
		return s
	}
	return nil
}

// addFields adds the JSON members of struct t's fields to s, those of an
// embedded struct without a name of its own after t's own.
func addFields(s *nameSet, t reflect.Type, building map[reflect.Type]*nameSet) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			embedded = append(embedded, ft)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := s.fields[name]; !ok {
			s.fields[name] = buildNames(f.Type, building)
			s.list = append(s.list, name)
		}
	}
	for _, et := range embedded {
		addFields(s, et, building)
	}
}
