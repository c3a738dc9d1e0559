package mcpimport

import "encoding/json"

// objectKeywords are the keywords of a JSON Schema that say nothing
// against the value being an object: annotations, and those that apply
// to objects alone.
var objectKeywords = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$defs": true, "definitions": true,
	"title": true, "description": true, "examples": true, "deprecated": true,
	"properties": true, "required": true, "additionalProperties": true,
	"patternProperties": true, "propertyNames": true, "minProperties": true,
	"maxProperties": true, "dependentRequired": true, "dependentSchemas": true,
	"unevaluatedProperties": true,
}

// withObjectType is an input schema with no "type" taken as the object
// it describes: when every keyword of its top level is one of
// objectKeywords (only {"$schema": ...}, say, or properties without a
// type, as some servers send), it gets "type": "object"; any other
// schema is returned as it is, and the gateway's own check decides.
func withObjectType(raw json.RawMessage) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil || top == nil {
		return raw
	}
	if _, typed := top["type"]; typed {
		return raw
	}
	for k := range top {
		if !objectKeywords[k] {
			return raw
		}
	}
	top["type"] = json.RawMessage(`"object"`)
	out, err := json.Marshal(top)
	if err != nil {
		return raw
	}
	return out
}
