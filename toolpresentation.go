package toolgate

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The bounds of what a tool shows besides its description: its title
// (and its annotations' title), in characters; its icons, in bytes of
// JSON as sent, in icons, and in characters of one icon's src (a data:
// URI holds the image itself). The output schema has the limits of a
// parameters schema (MaxParametersBytes, MaxParametersDepth,
// MaxParametersNodes).
const (
	MaxTitleLength   = 256
	MaxIconsBytes    = 64 << 10
	MaxIcons         = 8
	MaxIconSrcLength = 48 << 10
)

// CheckToolPresentation checks a tool's title, annotations, output schema
// and icons, as CheckToolSpec does: each absent is fine; the titles are
// plain text of at most MaxTitleLength characters; output_schema passes
// CheckToolOutputSchema; icons passes CheckToolIcons. Errors are
// BAD_REQUEST naming the field.
func CheckToolPresentation(spec Presentation) error {
	if err := checkTitle("title", spec.Title); err != nil {
		return err
	}
	if a := spec.Annotations; a != nil {
		if err := checkTitle("annotations.title", a.Title); err != nil {
			return err
		}
	}
	if len(spec.OutputSchema) > 0 && string(spec.OutputSchema) != "null" {
		if err := CheckToolOutputSchema(spec.OutputSchema); err != nil {
			return err
		}
	}
	if len(spec.Icons) > 0 && string(spec.Icons) != "null" {
		if err := CheckToolIcons(spec.Icons); err != nil {
			return err
		}
	}
	return nil
}

// checkTitle checks a title named field.
func checkTitle(field, title string) error {
	if n := len([]rune(title)); n > MaxTitleLength {
		return Errorf(EBadRequest, "%s is %d characters; the limit is %d", field, n, MaxTitleLength)
	}
	if err := CheckPlainText(title); err != nil {
		return Errorf(EBadRequest, "%s %v", field, err)
	}
	return nil
}

// CheckToolOutputSchema checks a tool's output_schema as
// CheckToolParameters checks parameters: one JSON Schema object with the
// top-level "type": "object" (MCP's structuredContent is an object), within
// the same limits. Whether it compiles is for the gateway's schema
// compiler to tell.
func CheckToolOutputSchema(raw json.RawMessage) error {
	return checkObjectSchema("output_schema", raw)
}

// Icon is one of a tool's icons, as MCP lists them.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// CheckToolIcons checks a tool's icons: a JSON array (within
// MaxIconsBytes, strict JSON) of at most MaxIcons objects with the fields
// of Icon only, each with an https: or data: src of at most
// MaxIconSrcLength characters and a theme, when set, of light or dark.
func CheckToolIcons(raw json.RawMessage) error {
	if len(raw) > MaxIconsBytes {
		return Errorf(EBadRequest, "icons is %d bytes; the limit is %d", len(raw), MaxIconsBytes)
	}
	if err := checkJSONText(raw, 4, 4*MaxIcons+2); err != nil {
		return Errorf(EBadRequest, "icons %s", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var icons []Icon
	if err := dec.Decode(&icons); err != nil || icons == nil {
		return Errorf(EBadRequest, "icons must be an array of {src, mimeType, sizes, theme}")
	}
	if len(icons) > MaxIcons {
		return Errorf(EBadRequest, "icons holds %d icons; the limit is %d", len(icons), MaxIcons)
	}
	for i, ic := range icons {
		if !strings.HasPrefix(ic.Src, "https://") && !strings.HasPrefix(ic.Src, "data:") {
			return Errorf(EBadRequest, "icons[%d].src must be an https: or data: URI", i)
		}
		if n := len([]rune(ic.Src)); n > MaxIconSrcLength {
			return Errorf(EBadRequest, "icons[%d].src is %d characters; the limit is %d", i, n, MaxIconSrcLength)
		}
		if err := CheckPlainText(ic.Src + ic.MIMEType + strings.Join(ic.Sizes, "")); err != nil {
			return Errorf(EBadRequest, "icons[%d] %v", i, err)
		}
		if ic.Theme != "" && ic.Theme != "light" && ic.Theme != "dark" {
			return Errorf(EBadRequest, "icons[%d].theme must be light or dark", i)
		}
	}
	return nil
}
