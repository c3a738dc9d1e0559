package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// TestToolPresentationStored: a tool's title, annotations, output schema
// and icons are stored with it and read back alike by every read (the
// session's tools, a page of tools, the open sessions' tools); a tool
// without them reads back without them.
func TestToolPresentationStored(t *testing.T) {
	onBothBackends(t, func(t *testing.T) {
		st, _ := openStore(t)
		insertSession(t, st, "s1")
		no := false
		spec := toolgate.ToolSpec{Name: "weather", Description: "d", Title: "Weather",
			Annotations:  &toolgate.ToolAnnotations{Title: "W", DestructiveHint: &no},
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"c":{"type":"number"}}}`),
			Icons:        json.RawMessage(`[{"src":"https://example.com/i.png"}]`)}
		plain := toolgate.ToolSpec{Name: "clock", Description: "d"}
		now := time.Now()
		err := st.Write(context.Background(), func(tx *store.Tx) error {
			for _, s := range []toolgate.ToolSpec{spec, plain} {
				r := store.NewToolRow("s1", s, now)
				if err := tx.UpsertTool(&r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, s := range []toolgate.ToolSpec{spec, plain} {
			b, _ := json.Marshal(s.Presentation())
			want[s.Name] = string(b)
		}
		check := func(how string, rows []store.ToolRow) {
			t.Helper()
			if len(rows) != 2 {
				t.Fatalf("%s: %d tools", how, len(rows))
			}
			for _, r := range rows {
				got, _ := json.Marshal(r.Spec().Presentation())
				if string(got) != want[r.Name] {
					t.Errorf("%s: %s reads back %s, want %s", how, r.Name, got, want[r.Name])
				}
			}
		}
		rows, err := st.ListTools(context.Background(), "s1")
		if err != nil {
			t.Fatal(err)
		}
		check("ListTools", rows)
		rows, err = st.ToolsPage(context.Background(), "", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		check("ToolsPage", rows)
		err = st.Write(context.Background(), func(tx *store.Tx) error {
			rows, err = tx.SessionTools("s1")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		check("SessionTools", rows)
	})
}
