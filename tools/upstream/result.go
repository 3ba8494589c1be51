package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/codecell/codecell/tools"
)

// Blobs keeps the bytes of images, audio and embedded resources that
// upstream results carry, so that they never pass through a program as
// base64. A store of memory/sqlite or memory/postgres fits behind a small
// adapter (its PutResult).
type Blobs interface {
	// PutBlob stores data for the caller in ctx (tools.CallerFrom) and
	// returns the URI it is read back at, such as codecell://results/{id}.
	PutBlob(ctx context.Context, mimeType string, data []byte) (uri string, err error)
}

// CodeUpstreamError is the code of a call the upstream server answered
// with an error (isError, or a JSON-RPC error), or that failed on the way
// to or from it.
const CodeUpstreamError = "upstream_error"

// CodeUpstreamUnavailable is the code of a call to a server that is not
// connected: it could not be started or reached, and the message says
// why.
const CodeUpstreamUnavailable = "upstream_unavailable"

// CodeUpstreamTimeout is the code of a call that outlasted the server's
// timeout setting.
const CodeUpstreamTimeout = "upstream_timeout"

// CodeUpstreamTooLarge is the code of a call whose result was larger than
// the server's max_response_bytes; it was not read into memory.
const CodeUpstreamTooLarge = "upstream_too_large"

// callResult is MCP's CallToolResult, its parts kept raw.
type callResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
}

// content is one item of a result's content.
type content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Resource *struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType,omitempty"`
		Text     *string `json:"text,omitempty"`
		Blob     string  `json:"blob,omitempty"`
	} `json:"resource,omitempty"`
}

// Handle is what a program receives for a binary content: where its bytes
// are kept, not the bytes.
type Handle struct {
	Type     string `json:"type"`
	MimeType string `json:"mimeType,omitempty"`
	// URI reads the bytes back (codecell://results/{id}); empty when no
	// store keeps them.
	URI   string `json:"uri"`
	Bytes int64  `json:"bytes"`
	// ResourceURI is the URI an embedded resource had upstream.
	ResourceURI string `json:"resourceUri,omitempty"`
}

// maxErrorText bounds the message of an upstream error.
const maxErrorText = 4 << 10

// convert turns a CallToolResult into the JSON value a program gets:
// structuredContent when present; else each content item — text that
// parses as JSON parsed, other text as a string, binary contents as
// Handles with their bytes stored — alone, or several as an array. An
// isError result becomes a *tools.Error with code upstream_error and the
// server's text.
func (u *upstream) convert(ctx context.Context, tool string, raw json.RawMessage) (json.RawMessage, error) {
	var r callResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &tools.Error{Code: CodeUpstreamError, Tool: tool, Message: fmt.Sprintf("upstream %q sent a result that is not a CallToolResult: %v", u.name, err)}
	}
	if r.IsError {
		return nil, &tools.Error{Code: CodeUpstreamError, Tool: tool, Message: fmt.Sprintf("upstream %q reported an error: %s", u.name, u.errorText(r))}
	}
	if len(r.StructuredContent) > 0 && !bytes.Equal(r.StructuredContent, []byte("null")) {
		return r.StructuredContent, nil
	}
	vals := make([]json.RawMessage, 0, len(r.Content))
	for _, item := range r.Content {
		v, err := u.contentValue(ctx, tool, item)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	switch len(vals) {
	case 0:
		return json.RawMessage("null"), nil
	case 1:
		return vals[0], nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(v)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// contentValue is the JSON value of one content item.
func (u *upstream) contentValue(ctx context.Context, tool string, item json.RawMessage) (json.RawMessage, error) {
	var c content
	if err := json.Unmarshal(item, &c); err != nil {
		return nil, &tools.Error{Code: CodeUpstreamError, Tool: tool, Message: fmt.Sprintf("upstream %q sent a content item that is not an object: %v", u.name, err)}
	}
	switch c.Type {
	case "text":
		return textValue(ctx, c.Text)
	case "image", "audio":
		data, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			return nil, &tools.Error{Code: CodeUpstreamError, Tool: tool, Message: fmt.Sprintf("upstream %q sent %s data that is not base64", u.name, c.Type)}
		}
		return u.keep(ctx, tool, Handle{Type: c.Type, MimeType: c.MimeType}, data)
	case "resource":
		if c.Resource == nil {
			break
		}
		h := Handle{Type: "resource", MimeType: c.Resource.MimeType, ResourceURI: c.Resource.URI}
		var data []byte
		if c.Resource.Text != nil {
			data = []byte(*c.Resource.Text)
			if h.MimeType == "" {
				h.MimeType = "text/plain"
			}
		} else {
			var err error
			if data, err = base64.StdEncoding.DecodeString(c.Resource.Blob); err != nil {
				return nil, &tools.Error{Code: CodeUpstreamError, Tool: tool, Message: fmt.Sprintf("upstream %q sent a resource blob that is not base64", u.name)}
			}
		}
		return u.keep(ctx, tool, h, data)
	}
	// resource_link and kinds this version does not know: as they came.
	return item, nil
}

// textValue is a text content as a value: parsed when it is JSON, else
// a string (tools.TextJSON, held before it is built).
func textValue(ctx context.Context, text string) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	if t != "" && (t[0] == '{' || t[0] == '[' || t[0] == '"' || t[0] == '-' || t[0] >= '0' && t[0] <= '9' || t == "true" || t == "false" || t == "null") {
		if b := []byte(t); json.Valid(b) {
			return b, nil
		}
	}
	return tools.TextJSON(ctx, text)
}

// keep stores a binary content and returns its handle, reporting it as an
// artifact of the call.
func (u *upstream) keep(ctx context.Context, tool string, h Handle, data []byte) (json.RawMessage, error) {
	h.Bytes = int64(len(data))
	if u.src.blobs != nil {
		mime := h.MimeType
		if mime == "" {
			mime = "application/octet-stream"
		}
		uri, err := u.src.blobs.PutBlob(ctx, mime, data)
		if err != nil {
			return nil, &tools.Error{Code: CodeUpstreamError, Tool: tool, Message: fmt.Sprintf("keep the %s the upstream %q returned: %v", h.Type, u.name, err)}
		}
		h.URI = uri
		tools.ReportArtifact(ctx, tools.Artifact{Tool: tool, Type: h.Type, URI: uri, MimeType: h.MimeType, Bytes: h.Bytes})
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// errorText is the message of an isError result: its texts.
func (u *upstream) errorText(r callResult) string {
	var parts []string
	for _, item := range r.Content {
		var c content
		if json.Unmarshal(item, &c) == nil && c.Type == "text" && strings.TrimSpace(c.Text) != "" {
			parts = append(parts, strings.TrimSpace(c.Text))
		}
	}
	msg := strings.Join(parts, "\n")
	if msg == "" {
		return "(no message)"
	}
	msg = u.red.String(msg)
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText] + "… (cut)"
	}
	return msg
}
