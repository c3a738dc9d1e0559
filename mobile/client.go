package mobile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/reconnect"
)

// Defaults of a new Client.
const (
	defaultReadyTimeout   = 3 * time.Second
	defaultHeartbeat      = 15 * time.Second
	defaultPollWait       = 25 * time.Second
	defaultMaxEventBytes  = 16 << 20
	defaultCloseFlush     = 5 * time.Second
	defaultMaxBatch       = 16
	rememberedCallIDLimit = 10000
)

// Client offers tools to a toolgate gateway and answers their calls. Build
// it with NewClient, register tools, set a handler, then Connect. Settings
// take effect at the next Connect.
type Client struct {
	api *gatewayAPI

	// regMu serialises tool registrations, so the gateway sees them in
	// the order they were made.
	regMu sync.Mutex

	mu            sync.Mutex
	clientKey     string
	clientInfo    toolgate.ClientInfo
	metadata      json.RawMessage
	store         SessionStore
	listener      ConnectionListener
	logger        Logger
	workers       int
	transportMode string
	readyTimeout  time.Duration
	pollWait      time.Duration
	probeEvery    time.Duration
	maxEventBytes int

	// Connection state, guarded by mu.
	heartbeat  time.Duration
	state      string
	transport  string
	lifeCtx    context.Context    // lives from Connect to the end of Close
	stop       context.CancelFunc // ends lifeCtx
	recv       *receiver          // from Connect to the end of Close
	outboxDone chan struct{}      // closed when the outbox has stopped

	// The parts with state of their own, each under its own lock.
	session *sessionSlot
	tools   *toolTable
	path    pathState
	calls   *callTable
	outbox  *outbox
	// reconnect decides every transport's wait before it connects again.
	reconnect *reconnect.Policy
}

// NewClient returns a client for the gateway at url (for example
// "https://gateway.example.com"). It keeps its session in memory until
// SetSessionStore gives it a lasting store.
func NewClient(url string) *Client {
	c := &Client{
		api:           newGatewayAPI(url),
		clientInfo:    toolgate.ClientInfo{Name: "toolgate-mobile", Platform: "other"},
		store:         NewMemorySessionStore(),
		logger:        slogLogger{},
		workers:       1,
		transportMode: TransportAuto,
		readyTimeout:  defaultReadyTimeout,
		maxEventBytes: defaultMaxEventBytes,
		session:       &sessionSlot{},
		tools:         newToolTable(),
		state:         StateIdle,
		lifeCtx:       context.Background(),
		calls:         newCallTable(rememberedCallIDLimit),
		reconnect:     reconnect.New(),
	}
	// The outbox outlives a connection: answers made before Close are
	// posted after the next Connect.
	c.outbox = newOutbox(c, defaultMaxBatch)
	return c
}

// SetClientKey sets the client key the gateway requires to create sessions
// (when it is configured with one).
func (c *Client) SetClientKey(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clientKey = key
}

// SetClientInfo describes the app to the gateway; platform is one of web,
// android, ios, desktop or other.
func (c *Client) SetClientInfo(name, version, platform string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clientInfo = toolgate.ClientInfo{Name: name, Version: version, Platform: platform}
}

// SetMetadata attaches a JSON object to sessions this client creates.
func (c *Client) SetMetadata(metadataJSON string) error {
	var obj map[string]any
	if err := json.Unmarshal([]byte(metadataJSON), &obj); err != nil {
		return fmt.Errorf("metadata must be a JSON object: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.metadata = json.RawMessage(metadataJSON)
	return nil
}

// SetSessionStore sets where the session is kept, so an app that restarts
// resumes it and receives the calls still open.
func (c *Client) SetSessionStore(store SessionStore) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store = store
}

// SetHandler sets the handler for every tool without a handler of its own.
func (c *Client) SetHandler(h ToolHandler) {
	if h == nil {
		c.SetCallHandler(nil)
		return
	}
	c.SetCallHandler(simpleHandler{h})
}

// SetCallHandler is SetHandler for a handler that receives the whole call
// (progress reports, cancellation, deadline).
func (c *Client) SetCallHandler(h CallHandler) {
	c.tools.setFallback(h)
}

// SetListener sets who is told of connection state changes.
func (c *Client) SetListener(l ConnectionListener) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listener = l
}

// SetLogger sets where log lines go.
func (c *Client) SetLogger(l Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l == nil {
		l = slogLogger{}
	}
	c.logger = l
}

// SetWorkers sets how many calls may run at once (1, the default, runs
// handlers one after another).
func (c *Client) SetWorkers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.workers = max(n, 1)
}

// SetTransport chooses how calls are received: TransportAuto (the
// default), TransportSSE or TransportPoll.
func (c *Client) SetTransport(mode string) error {
	switch mode {
	case TransportAuto, TransportSSE, TransportPoll:
	default:
		return fmt.Errorf("transport %q is not auto, sse or poll", mode)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transportMode = mode
	return nil
}

// SetReadyTimeoutMS sets how long a new stream may take to send its ready
// event, from its request being written, before it counts as held back by
// a proxy (default 3 s).
func (c *Client) SetReadyTimeoutMS(ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ms > 0 {
		c.readyTimeout = time.Duration(ms) * time.Millisecond
	}
}

// SetPollWaitMS sets how long a long-poll asks the gateway to hold it
// (default: what the gateway announced, else 25 s).
func (c *Client) SetPollWaitMS(ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ms > 0 {
		c.pollWait = time.Duration(ms) * time.Millisecond
	}
}

// SetStreamRetryMS sets how long the automatic transport, moved to the
// long-poll by a proxy that held its stream back, polls before it first
// probes the stream (default 60 s; doubled after each failed probe, up to
// 10 minutes). A probe that passes moves it back to the stream.
func (c *Client) SetStreamRetryMS(ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ms > 0 {
		c.probeEvery = time.Duration(ms) * time.Millisecond
	}
}

// SetMaxEventBytes sets the largest stream event accepted (default 16 MiB;
// the SSE library's own default of 64 KiB would drop large arguments).
func (c *Client) SetMaxEventBytes(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > 0 {
		c.maxEventBytes = n
	}
}

// SessionID returns the current session's id, or "" before Connect.
func (c *Client) SessionID() string {
	sess, _ := c.session.get()
	return sess.id
}

// State returns the connection state (one of the State constants).
func (c *Client) State() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Transport returns "sse" or "poll" while connected, else "".
func (c *Client) Transport() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != StateConnected {
		return ""
	}
	return c.transport
}

// connectedSession returns the session and the context of the
// connection, and whether a connection is running.
func (c *Client) connectedSession() (sessionCredentials, context.Context, bool) {
	c.mu.Lock()
	running, ctx := c.recv != nil, c.lifeCtx
	c.mu.Unlock()
	sess, ok := c.session.get()
	return sess, ctx, running && ok
}

func (c *Client) log(level, message string) {
	c.mu.Lock()
	l := c.logger
	c.mu.Unlock()
	l.Log(level, message)
}

// setState records the state and tells the listener when it changed.
func (c *Client) setState(state, detail string) {
	c.mu.Lock()
	changed := c.state != state || (state == StateConnected && c.transport != detail)
	c.state = state
	if state == StateConnected {
		c.transport = detail
	}
	l := c.listener
	c.mu.Unlock()
	if !changed {
		return
	}
	c.log(LevelInfo, "connection "+state+" "+detail)
	if l != nil {
		l.OnStateChange(state, detail)
	}
}

// Connect resumes the stored session, or creates one, registers the tools
// and starts receiving calls in the background. It returns once the tools
// are registered; from then on the client reconnects by itself until Close.
func (c *Client) Connect() error {
	c.mu.Lock()
	if c.recv != nil {
		c.mu.Unlock()
		return errors.New("the client is already connected")
	}
	ctx, stop := context.WithCancel(context.Background())
	c.lifeCtx, c.stop = ctx, stop
	c.mu.Unlock()
	c.setState(StateConnecting, "")
	// regMu is held until the connection counts as running, so a tool
	// registered meanwhile is either in the first sync or sent on its own.
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if err := c.establish(ctx); err != nil {
		stop()
		c.setState(StateIdle, err.Error())
		return err
	}
	recvCtx, stopRecv := context.WithCancel(ctx)
	c.mu.Lock()
	c.outboxDone = make(chan struct{})
	recv := newReceiver(c, newExecutor(c.workers, c.runCall), stopRecv)
	c.recv = recv
	outboxDone := c.outboxDone
	c.mu.Unlock()
	go func() {
		defer close(outboxDone)
		c.outbox.run(ctx)
	}()
	go recv.run(recvCtx)
	return nil
}

// Close stops receiving calls, cancels the calls still running (their
// handlers see Cancelled; their answers are not sent), gives answers
// already made a few seconds to be acknowledged, and saves the session so
// a later Connect resumes it. It does not close the session at the
// gateway: open calls wait there for the client to come back (see
// EndSession).
func (c *Client) Close() {
	c.mu.Lock()
	recv, stop, out, outboxDone := c.recv, c.stop, c.outbox, c.outboxDone
	c.mu.Unlock()
	if recv == nil {
		c.api.closeIdle() // a Connect that failed part-way may have left some
		return
	}
	// First no new calls, so none is taken and then dropped.
	recv.stop()
	for _, call := range recv.exec.close() {
		call.cancel(CancelClientClosed)
	}
	// The calls cut short stay open at the gateway, which sends them again
	// on the next connection: they must run again then.
	c.calls.cancelAndForgetActive(CancelClientClosed)
	select {
	case <-out.idleChan():
	case <-time.After(defaultCloseFlush):
		c.log(LevelWarn, "closing with answers not yet acknowledged; they are posted after the next Connect")
	}
	stop()
	<-outboxDone
	c.api.closeIdle()
	c.saveState()
	c.mu.Lock()
	c.recv = nil
	c.mu.Unlock()
	c.setState(StateClosed, "")
}

// EndSession closes the session at the gateway (its tools are removed and
// its open calls cancelled), forgets it in the store, and closes the client.
func (c *Client) EndSession() error {
	sess, ok := c.session.get()
	c.Close()
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := c.api.closeSession(ctx, sess)
	c.api.closeIdle()
	c.mu.Lock()
	store := c.store
	c.mu.Unlock()
	c.session.forget()
	if clearErr := store.Clear(); err == nil {
		err = clearErr
	}
	return err
}

// saveState writes the session and cursor to the store.
func (c *Client) saveState() {
	state := c.session.saved(c.api.baseURL)
	if state == nil {
		return
	}
	c.mu.Lock()
	store := c.store
	c.mu.Unlock()
	if err := store.Save(state); err != nil {
		c.log(LevelError, "saving the session state: "+err.Error())
	}
}
