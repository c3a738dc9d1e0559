package mcpimport

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// messageBoundFactor: a Streamable HTTP server's message (an
// application/json response body, or one event of an event stream) is
// read up to this many times Options.MaxResultBytes (4 MiB by default),
// enough for a result that is within bounds once mapped, whatever its
// JSON-RPC and MCP wrapping; the gateway never buffers more of it.
const messageBoundFactor = 4

// codeMessageTooLarge is the code of the JSON-RPC error the gateway puts
// in place of a response over the bound; its data is the Server's
// tooLargeMark, so that Execute tells it from a server's own error.
const codeMessageTooLarge = -32099

// errMessageTooLarge ends the reading of a body that is over the bound and
// carries no call of the gateway's to answer in its place.
var errMessageTooLarge = errors.New("the MCP server's message is over the gateway's bound")

// boundedTransport is the RoundTripper of the HTTP client a Streamable
// HTTP server is reached with: it reads at most max bytes of each message
// the server sends. A response to a call (tools/call, tools/list…) over
// the bound is replaced by a JSON-RPC error of code codeMessageTooLarge
// for that call, the rest of the body left unread and the TCP connection
// closed; the session carries on. An event over the bound on a stream
// that answers no call (the GET stream) is dropped with a warning and the
// stream carries on; any other body over the bound fails to read.
type boundedTransport struct {
	base http.RoundTripper
	max  int
	mark json.RawMessage // the data of the errors it makes up
	log  *slog.Logger
}

// newBoundedClient returns a copy of c whose transport is c's bounded by
// boundedTransport.
func newBoundedClient(c *http.Client, max int, log *slog.Logger) (*http.Client, json.RawMessage) {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	mark, _ := json.Marshal(rand.Text())
	bounded := *c
	bounded.Transport = &boundedTransport{base: base, max: max, mark: mark, log: log}
	return &bounded, mark
}

// RoundTrip implements http.RoundTripper.
func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	id, isCall := callID(req)
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	var answer func() []byte // what stands for a response over the bound
	if isCall && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		answer = func() []byte { return t.tooLargeResponse(id) }
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType == "text/event-stream" {
		var event func() []byte
		if answer != nil {
			event = func() []byte { return append(append([]byte("event: message\ndata: "), answer()...), "\n\n"...) }
		}
		resp.Body = &eventBoundedBody{body: resp.Body, r: bufio.NewReader(resp.Body), max: t.max, answer: event, log: t.log}
		return resp, nil
	}
	resp.Body = &boundedBody{body: resp.Body, max: t.max, answer: answer}
	resp.ContentLength = -1
	return resp, nil
}

// callID is the id of the JSON-RPC call a POST carries.
func callID(req *http.Request) (jsonrpc.ID, bool) {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return jsonrpc.ID{}, false
	}
	body, err := req.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if r, ok := msg.(*jsonrpc.Request); err == nil && ok && r.IsCall() {
		return r.ID, true
	}
	return jsonrpc.ID{}, false
}

// tooLargeResponse is the JSON-RPC error that stands for a response to
// call id over the bound.
func (t *boundedTransport) tooLargeResponse(id jsonrpc.ID) []byte {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    codeMessageTooLarge,
		Message: fmt.Sprintf("the MCP server's response is over %d bytes, the most the gateway reads of one message", t.max),
		Data:    t.mark,
	}})
	if err != nil {
		return nil
	}
	return data
}

// boundedBody is a body that is not an event stream: read whole, up to
// max bytes, on the first Read; past max, answer (when it gives one)
// stands for it, else reading fails.
type boundedBody struct {
	body   io.ReadCloser
	max    int
	answer func() []byte // nil: not the answer to a call

	read bool
	rest *bytes.Reader
	err  error
}

// Read implements io.Reader.
func (b *boundedBody) Read(p []byte) (int, error) {
	if !b.read {
		b.read = true
		data, err := io.ReadAll(io.LimitReader(b.body, int64(b.max)+1))
		switch {
		case err != nil:
			b.err = err
		case len(data) > b.max:
			b.body.Close() // the rest is not read
			data = nil
			if b.answer != nil {
				data = b.answer()
			} else {
				b.err = errMessageTooLarge
			}
		}
		b.rest = bytes.NewReader(data)
	}
	if b.rest.Len() == 0 && b.err != nil {
		return 0, b.err
	}
	return b.rest.Read(p)
}

// Close implements io.Closer.
func (b *boundedBody) Close() error { return b.body.Close() }

// eventBoundedBody passes an event stream on one whole event at a time
// (lines ending in \n, an event ending at a blank line, as the SDK reads
// them), each buffered up to max bytes. An event over max is replaced by
// answer's event, which ends the stream, or, without answer, dropped.
type eventBoundedBody struct {
	body   io.ReadCloser
	r      *bufio.Reader
	max    int
	answer func() []byte // nil: not the stream of a call
	log    *slog.Logger

	event []byte // the event being read, then passed on
	out   []byte // what is left to pass on of the last event
	end   error  // what Read returns once out is empty
}

// Read implements io.Reader.
func (b *eventBoundedBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.end != nil {
			return 0, b.end
		}
		b.next()
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// next reads the next event into out, or sets end.
func (b *eventBoundedBody) next() {
	b.event = b.event[:0]
	lineStart, dropping := true, false
	for {
		frag, err := b.r.ReadSlice('\n')
		if !dropping && len(b.event)+len(frag) > b.max {
			if b.answer != nil {
				b.body.Close() // the rest is not read
				b.out, b.end = b.answer(), io.EOF
				return
			}
			b.log.Warn("MCP server event dropped: over the gateway's bound", "bound_bytes", b.max)
			dropping, b.event = true, b.event[:0]
		}
		if !dropping {
			b.event = append(b.event, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			lineStart = false
			continue
		}
		if err != nil {
			if !dropping {
				b.out = b.event
			}
			b.end = err
			return
		}
		if lineStart && len(bytes.TrimRight(frag, "\r\n")) == 0 { // a blank line ends the event
			if !dropping {
				b.out = b.event
			}
			return
		}
		lineStart = true
	}
}

// Close implements io.Closer.
func (b *eventBoundedBody) Close() error { return b.body.Close() }
