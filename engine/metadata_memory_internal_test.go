package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestOpenSessionHoldsNoMetadata: what the engine keeps in memory of an
// open session holds nothing of its metadata (the finding: ~1 MiB per
// session, kept for the session's life, 300 sessions 557 MB). The session
// is created, given a tool, and recovered by a restarted engine; at each
// step every string and byte slice reachable from its in-memory state is
// searched for the metadata's marker. The replies still show the metadata,
// read from the store.
func TestOpenSessionHoldsNoMetadata(t *testing.T) {
	const marker = "metadata-marker-7f3a"
	cfg := testConfig(t)
	srv, stop := startServer(t, cfg)
	ctx := context.Background()
	metadata := json.RawMessage(`{"note":"` + marker + strings.Repeat("m", 3000) + `"}`)
	created, err := srv.Engine.Sessions.CreateSession(ctx, toolgate.CreateSessionRequest{Client: toolgate.ClientInfo{Name: "c"}, Metadata: metadata})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	checkNoMarker(t, srv.Engine, sid, marker, "after create")
	spec := toolgate.ToolSpec{Name: "echo", Description: "Echo", Parameters: json.RawMessage(`{"type":"object"}`)}
	if _, err := srv.Engine.Tools.RegisterTools(ctx, sid, toolgate.RegisterToolsRequest{Tools: []toolgate.ToolSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	checkNoMarker(t, srv.Engine, sid, marker, "after registering a tool")
	checkViewShowsMarker(t, srv.Engine, sid, marker)
	stop()

	srv, _ = startServer(t, cfg)
	checkNoMarker(t, srv.Engine, sid, marker, "after a restart")
	checkViewShowsMarker(t, srv.Engine, sid, marker)
}

// checkNoMarker fails when open session sid's in-memory state holds marker.
func checkNoMarker(t *testing.T, e *Engine, sid, marker, when string) {
	t.Helper()
	var paths []string
	if !e.core.sessions.with(sid, func(s *sessionState) {
		paths = findString(reflect.ValueOf(s), "session", marker, map[uintptr]bool{})
	}) {
		t.Fatalf("%s: session %s is not open", when, sid)
	}
	if len(paths) > 0 {
		t.Errorf("%s: the session's in-memory state holds its metadata at %v", when, paths)
	}
}

// checkViewShowsMarker fails when GET /v1/sessions/{sid} and the list do
// not show the metadata.
func checkViewShowsMarker(t *testing.T, e *Engine, sid, marker string) {
	t.Helper()
	view, err := e.Sessions.SessionView(context.Background(), sid)
	if err != nil || !strings.Contains(string(view.Metadata), marker) {
		t.Errorf("the session view lacks the metadata: %v %s", err, view.Metadata)
	}
	list, err := e.Sessions.ListSessions(context.Background(), toolgate.SessionQuery{})
	if err != nil || len(list.Sessions) != 1 || !strings.Contains(string(list.Sessions[0].Metadata), marker) {
		t.Errorf("the session list lacks the metadata: %v %+v", err, list)
	}
}

// findString walks every value reachable from v (fields, elements, map
// keys and values, through pointers and interfaces, each pointer once)
// and returns the paths of the strings and byte slices that hold marker.
func findString(v reflect.Value, path, marker string, seen map[uintptr]bool) []string {
	var found []string
	switch v.Kind() {
	case reflect.String:
		if strings.Contains(v.String(), marker) {
			found = append(found, path)
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return nil
		}
		seen[v.Pointer()] = true
		found = findString(v.Elem(), path, marker, seen)
	case reflect.Interface:
		if !v.IsNil() {
			found = findString(v.Elem(), path, marker, seen)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			found = append(found, findString(v.Field(i), path+"."+v.Type().Field(i).Name, marker, seen)...)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			if strings.Contains(string(v.Bytes()), marker) {
				found = append(found, path)
			}
			return found
		}
		for i := range v.Len() {
			found = append(found, findString(v.Index(i), path+"[]", marker, seen)...)
		}
	case reflect.Map:
		if v.IsNil() || seen[v.Pointer()] {
			return nil
		}
		seen[v.Pointer()] = true
		for it := v.MapRange(); it.Next(); {
			found = append(found, findString(it.Key(), path+"{key}", marker, seen)...)
			found = append(found, findString(it.Value(), path+"{}", marker, seen)...)
		}
	}
	return found
}
