package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// protocolVersion is the MCP version the clients speak: the newest, in
// which a request carries its client's identity in _meta and there is no
// session to open.
const protocolVersion = "2026-07-28"

// requestMeta is the _meta every request of protocolVersion carries, as
// mcp-go's client sends it.
const requestMeta = `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"codecell-load","version":"1"},"io.modelcontextprotocol/protocolVersion":"` + protocolVersion + `"}`

// mcpClient is one MCP client over Streamable HTTP, lean because it shares
// the machine's cores with the server it measures: a request is JSON-RPC
// written into a buffer it reuses, sent with the headers mcp-go's client
// sends; the answer is read whole — a JSON body, or an event stream up to
// the response to the request — and decoded. It makes one request at a
// time.
type mcpClient struct {
	http   *http.Client
	url    string
	header http.Header // the headers of every request
	// headers are a request's headers by method and tool: a request does
	// not change its headers, so requests share them.
	headers map[[2]string]http.Header
	nextID  int64
	body    []byte
	resp    bytes.Buffer
}

func newMCPClient(hc *http.Client, url string) *mcpClient {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", protocolVersion)
	return &mcpClient{http: hc, url: url, header: h, headers: map[[2]string]http.Header{}}
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

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	h, ok := c.headers[[2]string{method, name}]
	if !ok {
		h = c.header.Clone()
		h.Set("Mcp-Method", method)
		if name != "" {
			h.Set("Mcp-Name", name)
		}
		c.headers[[2]string{method, name}] = h
	}
	req.Header = h
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, bytes.TrimSpace(msg))
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var msg []byte
	switch ct {
	case "application/json":
		c.resp.Reset()
		if _, err := c.resp.ReadFrom(resp.Body); err != nil {
			return nil, fmt.Errorf("%s: read the answer: %w", method, err)
		}
		msg = c.resp.Bytes()
	case "text/event-stream":
		if msg, err = readEvents(resp.Body, id); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
	default:
		return nil, fmt.Errorf("%s: unexpected content type %q", method, ct)
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
