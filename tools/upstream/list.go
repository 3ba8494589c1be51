package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// A server's lists — tools, prompts, resources, resource templates — come
// in pages, each one message bounded by max_response_bytes. A list is
// bounded as a whole too, as it is read: its pages' bytes together by
// max_list_bytes (a list past it fails, and the server is not used until
// it lists less), its pages by maxListPages, and its entries by
// maxListTools or maxFeatures (past them the first are kept). Each page is
// decoded entry by entry, so that a page of many tiny entries is not
// decoded past the bound either. A tool keeps its schemas as raw JSON,
// but prompts, resources and templates are decoded into mcp-go's types,
// where a value costs more than its bytes (an argument {} of 3 bytes
// is a 64-byte struct; an opaque _meta becomes maps of interfaces): their
// entries are kept while their JSON values, counted before they are
// decoded, fit maxFeatureValues.

// DefaultMaxListBytes is Server.MaxListBytes's default.
const DefaultMaxListBytes = 16 << 20

// maxListPages bounds the pages of a list a server may send.
const maxListPages = 100

// maxListTools bounds the tools kept of one server; past it the first are
// kept.
const maxListTools = 10_000

// maxFeatures bounds the prompts, resources and templates kept of one
// server, each; past it the first are kept.
const maxFeatures = 10_000

// maxFeatureValues bounds the JSON values (counted by jsonValues) of the
// entries kept of one of a server's prompt, resource and template lists:
// at up to 64 bytes a value decoded, 16 MiB beside their bytes.
const maxFeatureValues = 1 << 18

// listTooLargeError is a list whose pages together were larger than the
// server's max_list_bytes. It holds nothing the server wrote.
type listTooLargeError struct {
	method string
	pages  int
	max    int64
}

func (e *listTooLargeError) Error() string {
	return fmt.Sprintf("its %s passed max_list_bytes (%s) within its first %d pages; codecell does not use the server while it lists that much (raise max_list_bytes for it if its list is really that large)",
		e.method, sizeText(e.max), e.pages)
}

// errListCut is a list that had more entries than codecell keeps: the
// first were kept.
var errListCut = errors.New("more entries than codecell keeps")

// listPages follows method's pages and returns the entries of field, at
// most keep of them. It stops with a *listTooLargeError when the pages'
// bytes together pass maxBytes, and with errListCut, and the first keep
// entries, when there are more.
func listPages[T any](ctx context.Context, c *conn, method, field string, keep listRoom, maxBytes int64) ([]T, error) {
	var all []T
	var total int64
	most := keep.entries
	cursor := ""
	for page := 1; page <= maxListPages; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := c.request(ctx, method, params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		total += int64(len(raw))
		if total > maxBytes {
			return nil, &listTooLargeError{method: method, pages: page, max: maxBytes}
		}
		next, cut, err := decodePage(raw, field, &keep, &all)
		raw = nil
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if cut {
			return all, fmt.Errorf("%s: %w (%d, and %d JSON values of prompts, resources or templates); kept the first %d", method, errListCut, most, maxFeatureValues, len(all))
		}
		if next == "" || next == cursor {
			return all, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("%s: more than %d pages", method, maxListPages)
}

// listRoom is what a list may still keep: entries, and their JSON values
// (values < 0: not counted).
type listRoom struct{ entries, values int }

// decodePage decodes one page of a list: it appends to out the entries of
// field that fit in room, without decoding those past them (cut says
// there were some), and returns the page's nextCursor.
func decodePage[T any](raw json.RawMessage, field string, room *listRoom, out *[]T) (next string, cut bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false, errors.New("the answer is not an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false, fmt.Errorf("the answer is not an object: %w", err)
		}
		switch key, _ := t.(string); key {
		case field:
			if t, err := dec.Token(); err != nil {
				return "", false, fmt.Errorf("the answer's %s are not a list: %w", field, err)
			} else if t == nil {
				continue
			} else if t != json.Delim('[') {
				return "", false, fmt.Errorf("the answer's %s are not a list", field)
			}
			for dec.More() {
				if room.entries <= 0 {
					cut = true
					if err := dec.Decode(&skipped{}); err != nil {
						return "", false, fmt.Errorf("the answer's %s are not a list: %w", field, err)
					}
					continue
				}
				var v T
				if room.values < 0 {
					err = dec.Decode(&v)
				} else {
					var entry json.RawMessage
					if err = dec.Decode(&entry); err == nil {
						n := jsonValues(entry)
						if n > room.values {
							cut, room.entries = true, 0
							continue
						}
						room.values -= n
						err = json.Unmarshal(entry, &v)
					}
				}
				if err != nil {
					return "", false, fmt.Errorf("the answer's %s are not a list: %w", field, err)
				}
				*out = append(*out, v)
				room.entries--
			}
			if _, err := dec.Token(); err != nil {
				return "", false, fmt.Errorf("the answer's %s are not a list: %w", field, err)
			}
		case "nextCursor":
			var s *string
			if err := dec.Decode(&s); err != nil {
				return "", false, fmt.Errorf("the answer's nextCursor is not a string: %w", err)
			}
			if s != nil {
				next = *s
			}
		default:
			if err := dec.Decode(&skipped{}); err != nil {
				return "", false, fmt.Errorf("the answer is not an object: %w", err)
			}
		}
	}
	return next, cut, nil
}

// jsonValues counts the values of a JSON text, about: its structural
// characters ({ [ , :) outside strings, and one more. Each costs at most
// a few dozen bytes once decoded.
func jsonValues(b []byte) int {
	n, in, esc := 1, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in:
			switch c {
			case '\\':
				esc = true
			case '"':
				in = false
			}
		case c == '"':
			in = true
		case c == '{' || c == '[' || c == ',' || c == ':':
			n++
		}
	}
	return n
}

// skipped is a JSON value read past without being kept.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// listTools returns the server's tools, following pages.
func (c *conn) listTools(ctx context.Context) ([]remoteTool, error) {
	return listPages[remoteTool](ctx, c, string(mcp.MethodToolsList), "tools", listRoom{entries: maxListTools, values: -1}, c.maxList)
}

// listAll follows a list's pages into out, up to maxFeatures entries and
// maxFeatureValues values.
func listAll[T any](ctx context.Context, c *conn, method, field string, out *[]T) error {
	all, err := listPages[T](ctx, c, method, field, listRoom{entries: maxFeatures, values: maxFeatureValues}, c.maxList)
	*out = all
	return err
}
