package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// sessionState is an open session as the engine keeps it in memory. Its
// fields are guarded by the session table's lock (sessionTable).
type sessionState struct {
	row   sessionRow
	tools map[string]*toolEntry

	conn     connRecord // how its client holds it (connection.go)
	streams  int        // open SSE streams
	polls    int        // held long-polls
	lastPoll time.Time  // when a poll last started or ended
	lastSeen time.Time  // any sign of life; the start of grace and TTL
	lastSave time.Time  // when lastSeen was last written to the store

	listeners map[*listener]struct{}
	done      chan struct{} // closed when the session closes
	endReason string        // "closed" or "expired", set before done is closed
	// shownReachable is whether the session was reachable when its
	// reachability was last looked at (at a listener's opening, at each
	// sweep): a change is told to the tool watchers (toolwatch.go).
	shownReachable bool
	// reachTimer looks at the reachability again when the grace of a
	// session left without listeners has run out (delivery.go reachLater).
	reachTimer *time.Timer
	// closing counts the closes in progress, each counted before it is
	// written: no call is taken for the session meanwhile, and a call
	// stored too late for the close to cancel it is cancelled by its own
	// dispatch (see endIfSessionClosed).
	closing int
	// version is the stored version of the row and tools this copy
	// holds (store.SessionRow.Version): a read of an older one is not
	// applied (cluster.go).
	version int64
}

// sessionRow is what the engine keeps of a session's stored row: what it
// decides with. What only replies show — the client's name, version and
// platform, the metadata (up to MaxMetadataBytes each), the creation time —
// stays in the store, and a reply reads it there (SessionView,
// ListSessions), so that memory does not grow with what clients send.
type sessionRow struct {
	ID          string
	TokenHash   string
	AutoApprove bool
}

// newSessionState returns the in-memory state of an open session whose
// row is stored; of the row it keeps only a sessionRow.
func newSessionState(row store.SessionRow, now time.Time) *sessionState {
	return &sessionState{
		row:       sessionRow{ID: row.ID, TokenHash: row.TokenHash, AutoApprove: row.AutoApprove},
		tools:     map[string]*toolEntry{},
		lastSeen:  now,
		lastSave:  now,
		listeners: map[*listener]struct{}{},
		done:      make(chan struct{}),
		version:   row.Version,

		shownReachable: true, // just seen
	}
}

// online reports whether the client holds a stream or has polled recently.
func (s *sessionState) online(now time.Time, pollWait time.Duration) bool {
	return s.streams > 0 || s.polls > 0 || (!s.lastPoll.IsZero() && now.Sub(s.lastPoll) < 2*pollWait)
}

// reachable reports whether calls may be sent: online, or offline for less
// than the grace period (calls then wait for the client to come back).
func (s *sessionState) reachable(now time.Time, cfg Options) bool {
	return s.online(now, cfg.PollWait) || now.Sub(s.lastSeen) < cfg.SessionGrace
}

// reachabilityChangedLocked notes whether the session is reachable now and
// reports whether that differs from the last time it was looked at.
func (s *sessionState) reachabilityChangedLocked(now time.Time, cfg Options) bool {
	r := s.reachable(now, cfg)
	changed := r != s.shownReachable
	s.shownReachable = r
	return changed
}

func (s *sessionState) closeListeners() {
	select {
	case <-s.done:
	default:
		close(s.done)
		for l := range s.listeners {
			if l.notify != nil {
				l.notify()
			}
		}
	}
}

// loadSessions rebuilds the open sessions and their tools. It compiles
// no schema: each tool's is compiled on its first call (toolEntry's
// argsSchema), so start-up costs a read of the rows however many tools
// the database holds, and a stored schema that no longer compiles, or is
// over today's limits, fails the calls of its tool, not the start.
func (e *Sessions) loadSessions(ctx context.Context) error {
	rows, err := e.st.OpenSessions(ctx)
	if err != nil {
		return err
	}
	tools, err := e.st.ListTools(ctx, "")
	if err != nil {
		return err
	}
	now := e.now()
	for _, r := range rows {
		e.sessions.add(newSessionState(r, now))
	}
	for i := range tools {
		t := &tools[i]
		entry := storedToolEntry(e.schemas, t.Spec(), t.RegisteredTime())
		e.sessions.with(t.SessionID, func(s *sessionState) { s.tools[t.Name] = entry })
	}
	return nil
}

// CreateSession stores a new session and returns its one-time token.
func (e *Sessions) CreateSession(ctx context.Context, req toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error) {
	if req.Client.Platform != "" && !slices.Contains(toolgate.Platforms, req.Client.Platform) {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "client.platform must be one of %v", toolgate.Platforms)
	}
	if len(req.Client.Name) > 200 || len(req.Client.Version) > 200 {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "client.name and client.version are limited to 200 characters")
	}
	// Stored as plain text: no NUL, refused by PostgreSQL (kept by SQLite).
	if err := toolgate.CheckPlainText(req.Client.Name); err != nil {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "client.name %v", err)
	}
	if err := toolgate.CheckPlainText(req.Client.Version); err != nil {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "client.version %v", err)
	}
	metadata, err := e.checkMetadata(req.Metadata)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	token := "tgs_" + newSecret()
	now := e.now()
	row := store.SessionRow{
		ID:            id.String(),
		TokenHash:     hashToken(token),
		ClientName:    req.Client.Name,
		ClientVersion: req.Client.Version,
		Platform:      req.Client.Platform,
		Metadata:      metadata,
		CreatedAt:     now.UnixMilli(),
		LastSeenAt:    now.UnixMilli(),
	}
	if err := e.st.Write(ctx, func(tx *store.Tx) error { return tx.InsertSession(&row) }); err != nil {
		return nil, err
	}
	e.sessions.add(newSessionState(row, now))
	e.log.Debug("session created", "session", row.ID, "client", row.ClientName, "platform", row.Platform)
	return &toolgate.SessionCreated{
		SessionID:        row.ID,
		Token:            token,
		HeartbeatMS:      e.cfg.Heartbeat.Milliseconds(),
		PollWaitMS:       e.cfg.PollWait.Milliseconds(),
		DefaultTimeoutMS: e.cfg.DefaultTimeout.Milliseconds(),
	}, nil
}

// maxMetadataDepth is how deeply a session's metadata may nest objects and
// arrays, the metadata object itself counted: far below what any JSON
// reader accepts (serde_json 128, Python's recursion limit about 1,000),
// so that every page of GET /v1/sessions can be read by every client,
// and ample for labels.
const maxMetadataDepth = 32

// checkMetadata returns the text a session's metadata is stored as: the
// object compacted, or re-encoded without the agent key (see dropSecrets);
// "{}" for none. It refuses (400) metadata that is not a JSON object that
// every reader reads alike (toolgate.CheckStrictJSON: valid UTF-8, no
// member named twice) or that nests deeper than maxMetadataDepth, and
// (413) metadata larger than MaxMetadataBytes as stored.
func (e *Sessions) checkMetadata(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	// Decoding reads an invalid byte as U+FFFD while the text kept would
	// hold the byte: what was checked would not be what is stored.
	if !utf8.Valid(raw) {
		return "", toolgate.Errorf(toolgate.EBadRequest, "metadata must be valid UTF-8")
	}
	metadata := compactJSON(raw)
	if err := e.checkMetadataSize(metadata); err != nil {
		return "", err // before decoding: no work spent on what is refused
	}
	if depth := jsonDepth(metadata); depth > maxMetadataDepth {
		return "", toolgate.Errorf(toolgate.EBadRequest,
			"metadata nests objects and arrays %d levels deep; at most %d levels are allowed", depth, maxMetadataDepth).
			WithDetails(map[string]any{"limit_depth": maxMetadataDepth})
	}
	// A member named twice is read as the first, the last or both by
	// different readers: refused, so the stored text says one thing.
	if err := toolgate.CheckStrictJSON([]byte(metadata)); err != nil {
		return "", toolgate.Errorf(toolgate.EBadRequest, "metadata %v", err)
	}
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(metadata))
	dec.UseNumber() // numbers re-encoded as they came
	if err := dec.Decode(&obj); err != nil {
		return "", toolgate.Errorf(toolgate.EBadRequest, "metadata must be a JSON object")
	}
	if dropSecrets(obj, e.holdsAgentKey) {
		b, err := json.Marshal(obj)
		if err != nil {
			return "", err
		}
		metadata = string(b)
	}
	// Re-encoding may have lengthened it (escapes such as \u003c).
	return metadata, e.checkMetadataSize(metadata)
}

// jsonDepth returns how deeply the JSON text raw nests objects and arrays
// (0 for a scalar), in one pass that skips strings; it does not check
// that raw is valid JSON.
func jsonDepth(raw string) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// checkMetadataSize refuses metadata larger than MaxMetadataBytes.
func (e *Sessions) checkMetadataSize(metadata string) error {
	if limit := e.cfg.MaxMetadataBytes; len(metadata) > limit {
		return toolgate.Errorf(toolgate.EPayloadTooLarge,
			"metadata is %d bytes of compact JSON; the limit is %d (--max-metadata-bytes)", len(metadata), limit).
			WithDetails(map[string]any{"limit_bytes": limit, "size_bytes": len(metadata)})
	}
	return nil
}

// AuthorizeSession checks that token is the secret of session sid and
// counts the request as a sign of life.
func (e *Sessions) AuthorizeSession(ctx context.Context, sid, token string) error {
	if token == "" {
		return toolgate.Errorf(toolgate.EUnauthenticated, "a session token is required (Authorization: Bearer <token>)")
	}
	hash := hashToken(token)
	var another bool
	mark := func(s *sessionState) {
		if another = s.row.ID != sid; !another {
			s.lastSeen = e.now()
		}
	}
	found := func() error {
		if another {
			return toolgate.Errorf(toolgate.EPermissionDenied, "this token belongs to another session")
		}
		return nil
	}
	if e.sessions.withToken(hash, mark) {
		return found()
	}
	row, err := e.st.FindSessionByTokenHash(ctx, hash)
	if err != nil {
		return err
	}
	if row != nil && !row.Closed() && e.nodes.catchUp(ctx, row.ID) {
		// Created through another node: read in, look again.
		if e.sessions.withToken(hash, mark) {
			return found()
		}
	}
	if row != nil && row.Closed() {
		return toolgate.Errorf(toolgate.EUnauthenticated, "session %s has %s; create a new session", row.ID, closedWord(row.CloseReason))
	}
	return toolgate.Errorf(toolgate.EUnauthenticated, "invalid session token")
}

func closedWord(reason string) string {
	if reason == "expired" {
		return "expired"
	}
	return "been closed"
}

// SessionView returns a session with its tools and whether it is online.
// The row, with its metadata, is read from the store; presence and tools
// from memory.
func (e *Sessions) SessionView(ctx context.Context, sid string) (*toolgate.SessionView, error) {
	row, err := e.st.GetSession(ctx, sid)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, toolgate.Errorf(toolgate.ENotFound, "no session %s", sid)
	}
	now := e.now()
	var v *toolgate.SessionView
	e.ensureSession(ctx, sid)
	if e.sessions.with(sid, func(s *sessionState) { v = e.viewLocked(row, s, now) }) {
		return v, nil
	}
	return &toolgate.SessionView{Session: row.Session(), Connection: toolgate.Connection{State: toolgate.PresenceOffline},
		Tools: []toolgate.ToolInfo{}}, nil
}

// Session list pages: the default and the largest number of sessions.
const (
	defaultSessionPage = 100
	maxSessionPage     = 500
)

// ListSessions returns a page of the open sessions, newest first, read
// from the store (an index range: sessions_open), each with its presence
// and tools from memory. q.Before is the next_before of the previous page.
func (e *Sessions) ListSessions(ctx context.Context, q toolgate.SessionQuery) (*toolgate.SessionList, error) {
	if q.Before != "" {
		// Ids are compared as text: only the spelling the gateway gives.
		if id, err := uuid.Parse(q.Before); err != nil || id.String() != q.Before {
			return nil, toolgate.Errorf(toolgate.EBadRequest, "before must be a session id from next_before")
		}
	}
	limit := pageSize(q.Limit, defaultSessionPage, maxSessionPage)
	rows, err := e.st.OpenSessionsPage(ctx, q.Before, limit+1)
	if err != nil {
		return nil, err
	}
	list := &toolgate.SessionList{Sessions: make([]toolgate.SessionView, 0, min(len(rows), limit))}
	if len(rows) > limit {
		rows = rows[:limit]
		next := rows[limit-1].ID
		list.NextBefore = &next
	}
	now := e.now()
	ids := make([]string, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
		e.ensureSession(ctx, ids[i]) // one another node created
	}
	// A session closed since the read is left out.
	e.sessions.withEach(ids, func(i int, s *sessionState) {
		list.Sessions = append(list.Sessions, *e.viewLocked(&rows[i], s, now))
	})
	return list, nil
}

// pageSize is a list's page size: limit within [1, most], def for none.
func pageSize(limit, def, most int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, most)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// viewLocked is the view of open session s, whose stored row is row.
func (e *Sessions) viewLocked(row *store.SessionRow, s *sessionState, now time.Time) *toolgate.SessionView {
	sess := row.Session()
	sess.AutoApprove = s.row.AutoApprove
	sess.LastSeenAt = toolgate.NewTime(s.lastSeen)
	online := s.online(now, e.cfg.PollWait)
	return &toolgate.SessionView{Session: sess, Online: online, Connection: s.conn.view(s.presence(now, e.cfg)),
		Tools: e.toolOps.toolInfosLocked(s, now)}
}

// CloseSession closes a session at the client's or an operator's request:
// its tools go, its open calls end cancelled (reason session_closed), its
// history stays.
func (e *Sessions) CloseSession(ctx context.Context, sid string) error {
	return e.closeSession(ctx, sid, "closed")
}

// countClosing counts a close of an open session in progress (+1) or one
// that did not close it (-1).
func (e *Sessions) countClosing(sid string, delta int) {
	e.sessions.with(sid, func(s *sessionState) { s.closing += delta })
}

// sessionClosedOutcome is how a session's open calls end when it closes
// for reason ("closed" or "expired").
func sessionClosedOutcome(reason string) store.Outcome {
	message := "the session was closed"
	if reason == "expired" {
		message = "the session expired"
	}
	return store.Outcome{Status: toolgate.StatusCancelled, ErrorCode: toolgate.ECancelled, ErrorMessage: message}
}

// closeSession closes a session for a reason ("closed" or "expired").
func (e *Sessions) closeSession(ctx context.Context, sid, reason string) error {
	now := e.now()
	type closing struct {
		found bool // the session was open, and this write closes it
		ended []endedCall
	}
	e.countClosing(sid, +1)
	closed, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (closing, error) {
		ok, err := tx.CloseSession(sid, reason, now)
		if err != nil || !ok {
			return closing{}, err
		}
		ended, err := cancelOpenCalls(tx, sid, sessionClosedOutcome(reason), now)
		return closing{found: true, ended: ended}, err
	})
	if err != nil || !closed.found {
		e.countClosing(sid, -1) // this close did not close it
	}
	if err != nil {
		return err
	}
	if !closed.found {
		row, err := e.st.GetSession(ctx, sid)
		if err != nil {
			return err
		}
		if row == nil {
			return toolgate.Errorf(toolgate.ENotFound, "no session %s", sid)
		}
		return nil // already closed: closing again changes nothing
	}
	e.sessions.remove(sid, reason)
	e.toolWatch.changed(sid)
	e.afterCallsEnded(closed.ended...)
	e.log.Debug("session "+reason, "session", sid, "cancelled_calls", len(closed.ended))
	return nil
}

// cancelOpenCalls ends a session's open calls with o inside tx (endCall:
// call_cancelled, reason session_closed, for each one the client was sent).
func cancelOpenCalls(tx *store.Tx, sid string, o store.Outcome, now time.Time) ([]endedCall, error) {
	open, err := tx.OpenCallsOfSession(sid)
	if err != nil {
		return nil, err
	}
	var ended []endedCall
	for i := range open {
		c, ok, err := endCall(tx, &open[i], o, toolgate.CancelSessionClosed, now)
		if err != nil {
			return nil, err
		}
		if ok {
			ended = append(ended, c)
		}
	}
	return ended, nil
}

// dropSecrets removes from client metadata, at any depth, every member
// named agent_key (in any case) and every string that holds the agent
// key (a page's URL with the key in its fragment, say), so that the agent
// key is never stored with a session nor shown by GET /v1/sessions. It
// reports whether it removed anything.
func dropSecrets(v any, isKey func(string) bool) bool {
	holdsKey := func(v any) bool {
		s, ok := v.(string)
		return ok && isKey(s)
	}
	dropped := false
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if strings.EqualFold(k, agentKeySetting) || holdsKey(x) {
				delete(v, k)
				dropped = true
				continue
			}
			dropped = dropSecrets(x, isKey) || dropped
		}
	case []any:
		for i, x := range v {
			if holdsKey(x) {
				v[i] = nil // the array keeps its length
				dropped = true
				continue
			}
			dropped = dropSecrets(x, isKey) || dropped
		}
	}
	return dropped
}
