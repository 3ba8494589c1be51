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
// decoded past the bound either.

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
func listPages[T any](ctx context.Context, c *conn, method, field string, keep int, maxBytes int64) ([]T, error) {
	var all []T
	var total int64
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
		next, cut, err := decodePage(raw, field, keep-len(all), &all)
		raw = nil
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if cut {
			return all, fmt.Errorf("%s: %w (%d); kept the first", method, errListCut, keep)
		}
		if next == "" || next == cursor {
			return all, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("%s: more than %d pages", method, maxListPages)
}

// decodePage decodes one page of a list: it appends up to room entries
// of field to out, without decoding those past them (cut says there were
// some), and returns the page's nextCursor.
func decodePage[T any](raw json.RawMessage, field string, room int, out *[]T) (next string, cut bool, err error) {
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
				if room <= 0 {
					cut = true
					if err := dec.Decode(&skipped{}); err != nil {
						return "", false, fmt.Errorf("the answer's %s are not a list: %w", field, err)
					}
					continue
				}
				var v T
				if err := dec.Decode(&v); err != nil {
					return "", false, fmt.Errorf("the answer's %s are not a list: %w", field, err)
				}
				*out = append(*out, v)
				room--
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

// skipped is a JSON value read past without being kept.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// listTools returns the server's tools, following pages.
func (c *conn) listTools(ctx context.Context) ([]remoteTool, error) {
	return listPages[remoteTool](ctx, c, string(mcp.MethodToolsList), "tools", maxListTools, c.maxList)
}

// listAll follows a list's pages into out, up to maxFeatures entries.
func listAll[T any](ctx context.Context, c *conn, method, field string, out *[]T) error {
	all, err := listPages[T](ctx, c, method, field, maxFeatures, c.maxList)
	*out = all
	return err
}
