package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// protocolVersion is the MCP version the clients speak: the newest, in
// which a request carries its client's identity in _meta and there is no
// session to open.
const protocolVersion = "2026-07-28"

// requestMeta is the _meta every request of protocolVersion carries, as
// mcp-go's client sends it.
const requestMeta = `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"codecell-load","version":"1"},"io.modelcontextprotocol/protocolVersion":"` + protocolVersion + `"}`

// mcpClient is one MCP client over Streamable HTTP, lean because it shares
// the machine's cores with the server it measures: it keeps one HTTP/1.1
// connection and makes one request at a time on it, from the calling
// goroutine (net/http's Transport hands each request to two goroutines of
// its own, which cost the driver a third of its CPU). A request is
// JSON-RPC written into a buffer it reuses, sent with the headers mcp-go's
// client sends; the answer is parsed by net/http (http.ReadResponse), read
// whole — a JSON body, gzipped or not, or an event stream up to the
// response to the request — and decoded.
type mcpClient struct {
	addr, host, path string

	conn net.Conn
	stop func() bool // ends the context's hold on conn
	br   *bufio.Reader
	bw   *bufio.Writer
	gz   *gzip.Reader

	nextID int64
	body   []byte
	resp   bytes.Buffer
}

// newMCPClient returns a client of the MCP endpoint at rawURL, an http://
// URL; it connects at its first request.
func newMCPClient(rawURL string) (*mcpClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%s: the load's clients speak plain HTTP on loopback", rawURL)
	}
	return &mcpClient{addr: u.Host, host: u.Host, path: u.RequestURI()}, nil
}

// close closes the client's connection.
func (c *mcpClient) close() {
	if c.conn != nil {
		c.stop()
		c.conn.Close()
		c.conn = nil
	}
}

func (c *mcpClient) dial(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	c.conn = conn
	c.stop = context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	if c.br == nil {
		c.br, c.bw = bufio.NewReaderSize(conn, 16<<10), bufio.NewWriterSize(conn, 4<<10)
	} else {
		c.br.Reset(conn)
		c.bw.Reset(conn)
	}
	return nil
}

// post sends body and returns the response, its body unread. A request
// on a kept-alive connection that the server had closed before reading
// it is sent again on a new one, as net/http's Transport does.
func (c *mcpClient) post(ctx context.Context, method, name string, body []byte) (*http.Response, error) {
	for {
		fresh := c.conn == nil
		if fresh {
			if err := c.dial(ctx); err != nil {
				return nil, err
			}
		}
		w := c.bw
		w.WriteString("POST ")
		w.WriteString(c.path)
		w.WriteString(" HTTP/1.1\r\nHost: ")
		w.WriteString(c.host)
		w.WriteString("\r\nUser-Agent: codecell-load\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAccept-Encoding: gzip\r\nMcp-Protocol-Version: " + protocolVersion + "\r\nMcp-Method: ")
		w.WriteString(method)
		if name != "" {
			w.WriteString("\r\nMcp-Name: ")
			w.WriteString(name)
		}
		w.WriteString("\r\nContent-Length: ")
		var n [20]byte
		w.Write(strconv.AppendInt(n[:0], int64(len(body)), 10))
		w.WriteString("\r\n\r\n")
		w.Write(body)
		err := w.Flush()
		var resp *http.Response
		if err == nil {
			resp, err = http.ReadResponse(c.br, nil)
		}
		if err == nil {
			return resp, nil
		}
		c.close()
		if fresh || !errors.Is(err, io.EOF) || ctx.Err() != nil {
			return nil, err
		}
	}
}

// rpcResponse is what a client reads of a JSON-RPC response.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// toolResult is what a client reads of a tools/call result.
type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// text is the result's text content, joined.
func (r *toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// discover asks the server what it is (server/discover), as mcp-go's
// client does before its first call.
func (c *mcpClient) discover(ctx context.Context) error {
	_, err := c.call(ctx, "server/discover", "", func(b []byte) []byte { return b })
	return err
}

// callTool calls a tool with the arguments args appends (a JSON object).
func (c *mcpClient) callTool(ctx context.Context, name string, args func([]byte) []byte) (*toolResult, error) {
	raw, err := c.call(ctx, "tools/call", name, func(b []byte) []byte {
		b = append(b, `,"arguments":`...)
		b = args(b)
		b = append(b, `,"name":`...)
		return strconv.AppendQuote(b, name)
	})
	if err != nil {
		return nil, err
	}
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("read the result of %s: %w", name, err)
	}
	return &res, nil
}

// call sends one request and returns its result. params appends the
// request's parameters after its _meta.
func (c *mcpClient) call(ctx context.Context, method, name string, params func([]byte) []byte) (json.RawMessage, error) {
	c.nextID++
	id := c.nextID
	b := append(c.body[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = strconv.AppendQuote(b, method)
	b = append(b, `,"params":{"_meta":`...)
	b = append(b, requestMeta...)
	b = params(b)
	b = append(b, "}}"...)
	c.body = b

	resp, err := c.post(ctx, method, name, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	msg, err := c.read(resp, id)
	if err != nil {
		c.close() // what is left of the answer is not the next one's
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if resp.Close {
		c.close()
	}
	var r rpcResponse
	if err := json.Unmarshal(msg, &r); err != nil {
		return nil, fmt.Errorf("%s: read the answer: %w", method, err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s: error %d: %s", method, r.Error.Code, r.Error.Message)
	}
	if string(r.ID) != strconv.FormatInt(id, 10) {
		return nil, fmt.Errorf("%s: the answer is to request %s, not %d", method, r.ID, id)
	}
	return r.Result, nil
}

// read reads an answer to request id whole and returns its JSON-RPC
// message.
func (c *mcpClient) read(resp *http.Response, id int64) ([]byte, error) {
	defer resp.Body.Close()
	body := io.Reader(resp.Body)
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if c.gz == nil {
			gz, err := gzip.NewReader(resp.Body)
			if err != nil {
				return nil, fmt.Errorf("read the answer: %w", err)
			}
			c.gz = gz
		} else if err := c.gz.Reset(resp.Body); err != nil {
			return nil, fmt.Errorf("read the answer: %w", err)
		}
		body = c.gz
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		c.resp.Reset()
		if _, err := c.resp.ReadFrom(body); err != nil {
			return nil, fmt.Errorf("read the answer: %w", err)
		}
		// A gzip stream ends before its body does: the body is read to
		// its end, so that the connection is ready for the next answer.
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return nil, fmt.Errorf("read the answer: %w", err)
		}
		return c.resp.Bytes(), nil
	case "text/event-stream":
		return readEvents(body, id)
	default:
		return nil, fmt.Errorf("unexpected content type %q", ct)
	}
}

// readEvents reads an event stream to its end and returns the data of the
// JSON-RPC response to request id; notifications before it are read and
// passed over.
func readEvents(body io.Reader, id int64) ([]byte, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 64<<20)
	want := strconv.FormatInt(id, 10)
	var found, data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			continue
		}
		if len(line) > 0 || len(data) == 0 {
			continue
		}
		var probe struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(data, &probe) == nil && probe.Method == "" && string(probe.ID) == want {
			found = bytes.Clone(data)
		}
		data = data[:0]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the event stream: %w", err)
	}
	if found == nil {
		return nil, fmt.Errorf("the event stream ended without the response to request %d", id)
	}
	return found, nil
}
