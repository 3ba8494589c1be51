package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/codecell/codecell/tools"
)

// DefaultMaxResponseBytes is Server.MaxResponseBytes's default, as
// OpenAPI sources' max_response_bytes.
const DefaultMaxResponseBytes = 16 << 20

// A server's messages are bounded while they are read, before any JSON is
// decoded: limitReader sits between the server's stream (a child's
// stdout, an HTTP response body) and the MCP transport, and passes on
// every message up to the limit. A longer one it reads to its end without
// keeping it, watching only for its top-level "id" and "method"; in its
// place the transport gets a JSON-RPC error response to that id, so that
// the call that asked for it fails at once (oversized, which send turns
// into a *tooLargeError), and the connection goes on. An oversized
// notification, or a message without an id, is dropped.
//
// A message is bounded by what it decodes into as well, whoever reads it
// (issue 19, attack15 I3): its JSON values are counted as it is read
// (tools.ValueCounter). One a call holds is held as it arrives (hold,
// below). One no call holds — a stdio server's, an HTTP response to a
// request that holds nothing, the Streamable HTTP GET stream's, a legacy
// SSE stream's — is dropped as an oversized one is when its bytes plus
// tools.DecodedValueBytes a value pass max_response_bytes, unless it is
// the answer to one of codecell's own requests with a result and no
// error: mcp-go keeps such a result raw, and codecell counts it before it
// decodes it (a call's result in its call's results in flight, a list's
// entries against the list's bounds). Everything else — a notification,
// a request from the server, an error's data, the answer to initialize —
// mcp-go decodes whole, into maps of every value: four notifications of
// 15 MB of {} grew codecell by 700–800 MiB, and an initialize answer of
// them was kept for the connection's life.

// streamKind is how a stream frames its messages.
type streamKind int

const (
	// jsonLines: one message a line (stdio).
	jsonLines streamKind = iota
	// wholeBody: the whole stream is one message (an HTTP JSON body).
	wholeBody
	// eventStream: Server-Sent Events; a message is an event's data.
	eventStream
)

// oversized is what a limitReader reports of a message it dropped: its
// id and whether it had a method (a request or notification), as they
// came, and why (its size, and what it decodes into or the holder's
// error).
type oversized func(id json.RawMessage, method bool, why dropped)

// dropped is why a limitReader dropped a message.
type dropped struct {
	// size is the message's bytes, as far as they were read.
	size int64
	// decoded, when set, is what the message decodes into (its bytes
	// and tools.DecodedValueBytes a value): it was dropped for that, its
	// bytes being within max_response_bytes, since no call held it.
	decoded int64
	// refused is the holder's error when the message was dropped because
	// the bytes it would take could not be held (see holdCopies).
	refused error
}

// A message a call waits for is held as it is read, in the call's results
// in flight (tools.HoldDecoded), before it is whole: what an HTTP
// response's messages take in the server while they are read and decoded
// — this reader's buffer, the transport's decoder's, and the decoded
// message's result, each about the message's bytes — plus what its JSON
// values decode into (tools.DecodedValueBytes each), counted as they
// arrive. Eight calls of an upstream answering 15 MB each grew the server
// by 470 MiB though their bytes were within the results in flight (issue
// 19, attack9 D7); a message the call cannot hold is dropped as it is
// read, as an oversized one is, and the call fails with the holder's
// error (result_bytes_limit). Only an HTTP response carries its call's
// context: a stdio server's messages, and a legacy SSE stream's, are read
// one at a time on the connection's own goroutine, and are bounded by
// max_response_bytes — in bytes, and what mcp-go decodes in what it
// decodes into (above); a call's result is held by its call once whole.
const holdCopies = 3

// holder holds the bytes of a message being read: its size so far and
// its JSON values counted so far.
type holder func(size int64, values int) error

// tooLargeCode is the JSON-RPC error code of the responses limitReader
// makes up; send knows them by their id, not by this code, which a
// server could send too.
const tooLargeCode = -32099

// limitReader bounds the messages of a stream; see above.
type limitReader struct {
	src  *bufio.Reader
	kind streamKind
	max  int64
	drop oversized
	// hold, when set, holds each message's bytes as they are read; a
	// message it refuses is dropped.
	hold holder

	out [][]byte // what Read passes on next, in order
	// buf is the start of the message being read, up to firstPiece
	// bytes, reused from message to message; more is the rest of it, in
	// pieces as they were read: a long message is held once, never
	// copied to a larger buffer as it grows (appending 15 MB a chunk at a
	// time allocated 64 MB).
	buf  []byte
	more [][]byte
	err  error // the source's error, once out is empty
}

// firstPiece bounds buf, which holds a message whole when it is short.
const firstPiece = 64 << 10

func newLimitReader(r io.Reader, kind streamKind, max int64, drop oversized) *limitReader {
	return &limitReader{src: bufio.NewReaderSize(r, 64<<10), kind: kind, max: max, drop: drop}
}

func (l *limitReader) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.out, l.err = l.next()
	}
	n := copy(p, l.out[0])
	if l.out[0] = l.out[0][n:]; len(l.out[0]) == 0 {
		l.out[0] = nil
		l.out = l.out[1:]
	}
	return n, nil
}

// next reads the next message (a line, an event, the body) and returns
// what to pass on for it.
func (l *limitReader) next() ([][]byte, error) {
	l.buf, l.more = l.buf[:0], nil
	var sc idScanner
	var size int64
	// Every message's values are counted: one no call holds is bounded by
	// them too.
	var values tools.ValueCounter
	var refused error
	over := false
	atStart := true // at the start of a line
	data := false   // in an event stream, the line is a data line
	for {
		// A chunk holds at most one newline, at its end.
		chunk, err := l.src.ReadSlice('\n')
		lineEnd := err == nil
		if errors.Is(err, bufio.ErrBufferFull) {
			err = nil
		}
		// A line of nothing but carriage returns is blank too: mcp-go's
		// reader trims them all (attack13 H2).
		blank := atStart && lineEnd && len(bytes.TrimRight(chunk, "\r\n")) == 0
		size += int64(len(chunk))
		payload := chunk
		if l.kind == eventStream {
			// Only data lines hold the message: a comment or a field
			// such as event: is not JSON, and a quote there would hide
			// the data's values from the count (attack12 G2).
			if atStart {
				data = bytes.HasPrefix(chunk, []byte("data:"))
				if data {
					payload = chunk[len("data:"):]
				}
			}
			if !data {
				payload = nil
			}
		}
		if !over {
			values.Write(payload)
		}
		if !over && l.hold != nil {
			if herr := l.hold(size, values.Values()); herr != nil {
				refused = herr
			}
		}
		if !over && (size > l.max || refused != nil) {
			over = true
			l.scanKept(&sc)
			l.buf, l.more = l.buf[:0], nil
		}
		if over {
			l.scan(&sc, chunk, atStart)
		} else {
			l.keep(chunk)
		}
		atStart = lineEnd
		end := err != nil // the stream's end ends the message
		switch l.kind {
		case jsonLines:
			end = end || lineEnd
		case eventStream:
			end = end || blank // an event ends at a blank line
		}
		if !end {
			continue
		}
		why := dropped{size: size, refused: refused}
		if !over {
			decoded := tools.DecodedSize(size, values.Values())
			if l.hold != nil || decoded <= l.max {
				return append([][]byte{l.buf}, l.more...), err
			}
			// What no call holds: passed on only when mcp-go keeps it
			// raw, for codecell to count.
			l.scanKept(&sc)
			if sc.rawResult() {
				return append([][]byte{l.buf}, l.more...), err
			}
			l.buf, l.more = l.buf[:0], nil
			why.decoded = decoded
		}
		return [][]byte{l.replacement(&sc, why)}, err
	}
}

// scanKept feeds sc the message kept so far.
func (l *limitReader) scanKept(sc *idScanner) {
	l.scan(sc, l.buf, true)
	prev := l.buf
	for _, piece := range l.more {
		l.scan(sc, piece, len(prev) == 0 || prev[len(prev)-1] == '\n')
		prev = piece
	}
}

// keep keeps chunk, the next piece of the message being read.
func (l *limitReader) keep(chunk []byte) {
	if len(l.more) == 0 && len(l.buf)+len(chunk) <= firstPiece {
		l.buf = append(l.buf, chunk...)
		return
	}
	l.more = append(l.more, bytes.Clone(chunk))
}

// scan feeds the JSON of an oversized message to sc: for an event
// stream, the payload of its data lines only. lineStart says b starts a
// line.
func (l *limitReader) scan(sc *idScanner, b []byte, lineStart bool) {
	if l.kind != eventStream {
		sc.feed(b)
		return
	}
	for len(b) > 0 {
		line, rest, found := bytes.Cut(b, []byte("\n"))
		if lineStart {
			d, ok := bytes.CutPrefix(line, []byte("data:"))
			sc.inData = ok
			if ok {
				line = bytes.TrimPrefix(d, []byte(" "))
			}
		}
		if sc.inData {
			sc.feed(line)
			if found {
				sc.feed([]byte("\n"))
			}
		}
		if !found {
			return
		}
		b, lineStart = rest, true
	}
}

// replacement is what the transport gets instead of a message it
// dropped.
func (l *limitReader) replacement(sc *idScanner, d dropped) []byte {
	id := sc.id
	if l.drop != nil {
		l.drop(id, sc.method, d)
	}
	if id == nil || sc.method {
		return l.keepFraming(nil)
	}
	why := fmt.Sprintf("codecell: the message was larger than %d bytes", l.max)
	switch {
	case d.refused != nil:
		why = "codecell: the message could not be held in the results in flight"
	case d.decoded > 0:
		why = fmt.Sprintf("codecell: the message decodes into about %d bytes (its %d bytes and %d a JSON value), more than %d", d.decoded, d.size, tools.DecodedValueBytes, l.max)
	}
	msg, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      json.RawMessage(id),
		"error":   map[string]any{"code": tooLargeCode, "message": why},
	})
	return l.keepFraming(msg)
}

// keepFraming frames a message (nil for none) as the stream does.
func (l *limitReader) keepFraming(msg []byte) []byte {
	switch l.kind {
	case jsonLines:
		if msg == nil {
			return []byte("\n") // an empty line, which the transport skips
		}
		return append(msg, '\n')
	case eventStream:
		if msg == nil {
			return []byte(":\n\n") // a comment
		}
		return append(append([]byte("event: message\ndata: "), msg...), "\n\n"...)
	}
	if msg == nil {
		return []byte("{}")
	}
	return msg
}

// idScanner walks the JSON of a message without keeping it, and records
// its top-level "id" (as it came, when it is a string or number of at
// most maxID bytes; the last, as a decoder takes it) and whether it has a
// top-level "method" and "error". Keys are matched as encoding/json
// matches them to mcp-go's fields: escapes undone, case folded, so that
// "\u0065rror" or "ID" is no way around the bound.
type idScanner struct {
	depth    int
	inString bool
	escaped  bool
	state    scanState
	key      []byte // the top-level key being read
	keyLong  bool   // longer than any key of interest
	name     string // the top-level key whose value is being read
	value    []byte // the id being read
	capture  bool   // value is the id's
	id       []byte
	method   bool
	error    bool
	inData   bool // eventStream: within a data line
}

// maxKey bounds the top-level key a scanner keeps: "method" with every
// letter escaped is 36 bytes.
const maxKey = 64

// keyName is the top-level key just read, as a decoder reads it, or ""
// when it is longer than any of interest.
func (s *idScanner) keyName() string {
	if s.keyLong {
		return ""
	}
	if bytes.IndexByte(s.key, '\\') < 0 {
		return string(s.key)
	}
	var k string
	if json.Unmarshal(append(append([]byte{'"'}, s.key...), '"'), &k) != nil {
		return ""
	}
	return k
}

// rawResult reports whether the message is the answer to one of
// codecell's own requests (its ids are "codecell-N") with no method and
// no error: the transport keeps its result raw, for codecell to count and
// decode. mcp-go's own requests (initialize) are answered into its types.
func (s *idScanner) rawResult() bool {
	return bytes.HasPrefix(s.id, []byte(`"codecell-`)) && !s.method && !s.error
}

type scanState int

const (
	wantKey   scanState = iota // at the top level, before a key
	inKey                      // reading a top-level key
	wantColon                  // after a top-level key
	wantValue                  // after the colon
	inValue                    // reading a top-level value
)

// maxID bounds the id a scanner keeps; codecell's own are far shorter.
const maxID = 256

func (s *idScanner) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		if s.depth < 2 {
			s.step(b[i])
			continue
		}
		// Within a top-level value only strings and brackets matter
		// (what step does there, in a tight loop): most of a message.
		for ; i < len(b) && s.depth >= 2; i++ {
			c := b[i]
			if s.inString {
				switch {
				case s.escaped:
					s.escaped = false
				case c == '\\':
					s.escaped = true
				case c == '"':
					s.inString = false
				}
				continue
			}
			switch c {
			case '"':
				s.inString = true
			case '{', '[':
				s.depth++
			case '}', ']':
				s.depth--
			}
		}
		i-- // the loop's i++ moves past the last byte read
	}
}

func (s *idScanner) step(c byte) {
	top := s.depth == 1
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
		}
		switch {
		case top && s.state == inKey:
			if !s.inString {
				s.state = wantColon
			} else if len(s.key) < maxKey {
				s.key = append(s.key, c)
			} else {
				s.keyLong = true
			}
		case top && s.capture:
			s.keep(c)
			if !s.inString {
				s.endValue()
			}
		}
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
		if top && s.capture {
			s.endValue()
		}
		return
	case '"':
		s.inString = true
		switch {
		case top && s.state == wantKey:
			s.state, s.key, s.keyLong = inKey, s.key[:0], false
		case top && s.state == wantValue:
			s.startValue()
			if s.capture {
				s.keep(c)
			}
		}
		return
	case '{', '[':
		if top && s.state == wantValue {
			s.state = inValue // an object or array: not an id
			if strings.EqualFold(s.name, "id") {
				s.id = nil // the last id is the decoder's
			}
		}
		s.depth++
		if s.depth == 1 {
			s.state = wantKey
		}
		return
	case '}', ']':
		if top && s.capture {
			s.endValue()
		}
		s.depth--
		return
	case ':':
		if top && s.state == wantColon {
			s.state = wantValue
			s.name = s.keyName()
			switch {
			case strings.EqualFold(s.name, "method"):
				s.method = true
			case strings.EqualFold(s.name, "error"):
				s.error = true
			}
		}
		return
	case ',':
		if top {
			if s.capture {
				s.endValue()
			}
			s.state = wantKey
		}
		return
	}
	if top && s.state == wantValue {
		s.startValue()
	}
	if top && s.capture {
		s.keep(c)
	}
}

// startValue begins a top-level value, captured when it is the id's.
func (s *idScanner) startValue() {
	s.state = inValue
	s.capture = strings.EqualFold(s.name, "id")
	s.value = s.value[:0]
}

func (s *idScanner) keep(c byte) {
	if len(s.value) <= maxID {
		s.value = append(s.value, c)
	}
}

// endValue ends the id's value: kept when it is short and valid JSON,
// and forgotten otherwise (the last id is the decoder's).
func (s *idScanner) endValue() {
	s.capture = false
	s.id = nil
	if len(s.value) <= maxID && json.Valid(s.value) && s.value[0] != 'n' && s.value[0] != 't' && s.value[0] != 'f' {
		s.id = bytes.Clone(s.value)
	}
}

// limitTransport bounds the messages of the HTTP responses of a
// connection: an event stream's events, any other body whole.
type limitTransport struct {
	base http.RoundTripper
	max  int64
	drop oversized
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	kind := wholeBody
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		kind = eventStream
	}
	lr := newLimitReader(resp.Body, kind, t.max, t.drop)
	if ctx := r.Context(); tools.HoldsDecoded(ctx) {
		lr.hold = func(size int64, values int) error {
			return tools.HoldDecoded(ctx, holdCopies*size, values)
		}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{lr, resp.Body}
	return resp, nil
}
