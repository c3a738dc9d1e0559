package handlers

import (
	"encoding/json"
	"slices"
	"sort"
	"testing"

	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// TestOpenAPIErrorCodes: the document's ErrorCode lists exactly the codes
// the status table maps, so a code added to one is added to the other.
func TestOpenAPIErrorCodes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				} `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	documented := slices.Clone(doc.Components.Schemas.ErrorCode.Enum)
	mapped := jsonhttp.Codes()
	sort.Strings(documented)
	sort.Strings(mapped)
	if len(mapped) < 10 || !slices.Equal(documented, mapped) {
		t.Errorf("the OpenAPI document's ErrorCode lists\n  %v\nthe status table maps\n  %v", documented, mapped)
	}
}
