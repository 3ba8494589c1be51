package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrPageRange is a page request outside the stored result.
var ErrPageRange = errors.New("page out of range")

// BytePage is a byte range of a stored result. Data is text, not
// necessarily valid JSON; pages never split a UTF-8 sequence.
type BytePage struct {
	Data []byte `json:"-"`
	// Offset is where Data starts in the full result, Next where the next
	// page starts (Total when this is the last), Total the full size.
	Offset int  `json:"offset"`
	Next   int  `json:"next"`
	Total  int  `json:"total"`
	More   bool `json:"more"`
}

// PageBytes returns up to length bytes of full from offset. An offset
// inside a UTF-8 sequence moves forward to the next rune, and the end moves
// back to a rune boundary (forward, if that would leave the page empty).
func PageBytes(full []byte, offset, length int) (BytePage, error) {
	total := len(full)
	if offset < 0 || offset > total || (offset == total && total > 0) {
		return BytePage{}, fmt.Errorf("page bytes: offset %d of %d: %w", offset, total, ErrPageRange)
	}
	if length <= 0 {
		return BytePage{}, fmt.Errorf("page bytes: length %d: %w", length, ErrPageRange)
	}
	start := offset
	for start < total && full[start]&0xC0 == 0x80 {
		start++
	}
	end := min(total, start+length)
	for end > start && end < total && full[end]&0xC0 == 0x80 {
		end--
	}
	if end == start && start < total {
		end++
		for end < total && full[end]&0xC0 == 0x80 {
			end++
		}
	}
	return BytePage{Data: full[start:end], Offset: start, Next: end, Total: total, More: end < total}, nil
}

// ItemPage is a range of the items of an array in a stored result.
type ItemPage struct {
	// Items is a JSON array of the items in the range.
	Items json.RawMessage `json:"items"`
	// Offset is the index of the first item, Count how many Items holds,
	// Total how many the array has.
	Offset int  `json:"offset"`
	Count  int  `json:"count"`
	Total  int  `json:"total"`
	More   bool `json:"more"`
}

// PageItems returns count items from offset of the array at the JSON
// Pointer pointer ("" for a top-level array) in full, as many of them as
// fit in maxBytes of JSON (an item larger than that is refused with
// ErrPageRange). The page is not cut to a budget; pass Items to Limit for
// that.
//
// It builds no tree: the text before, between and after the page's items
// is scanned and skipped, and the items are copied as the bytes they are,
// checked and compacted (encoding/json's Compact). A tree of the whole
// result cost about 72 bytes a value on every read, and a principal could
// read one item of a 2-million-value result 32 times at once (attack10
// E7: +4 GiB); one item holding every value did the same (attack13 H1);
// a tree of the page alone still cost 9 MiB for an item of 131,000 zeros
// within the page's 256 KiB (attack14 I3).
func PageItems(full json.RawMessage, pointer string, offset, count, maxBytes int) (ItemPage, error) {
	s := string(full)
	at, err := seekPointer(s, pointer)
	if err != nil {
		return ItemPage{}, fmt.Errorf("page items: %w", err)
	}
	if s[at] != '[' {
		return ItemPage{}, fmt.Errorf("page items: %q is not an array", pointer)
	}
	if count <= 0 {
		return ItemPage{}, fmt.Errorf("page items: count %d: %w", count, ErrPageRange)
	}
	var items [][2]int // their extents in s
	total, size, filled := 0, 0, false
	_, err = eachItem(s, at, func(start, end int) error {
		if !filled && total >= offset && total-offset < count {
			switch n := end - start; {
			case len(items) == 0 && n > maxBytes:
				return fmt.Errorf("item %d is %d bytes of JSON, more than the %d a page holds; read a pointer into it, or the result by bytes: %w", total, n, maxBytes, ErrPageRange)
			case size+n > maxBytes:
				filled = true // the page holds what fits
			default:
				size += n
				items = append(items, [2]int{start, end})
			}
		}
		total++
		return nil
	})
	if err != nil {
		return ItemPage{}, fmt.Errorf("page items: %w", err)
	}
	if offset < 0 || offset > total || (offset == total && total > 0) {
		return ItemPage{}, fmt.Errorf("page items: offset %d of %d items: %w", offset, total, ErrPageRange)
	}
	var page bytes.Buffer
	page.Grow(size + len(items) + 2)
	page.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			page.WriteByte(',')
		}
		if err := json.Compact(&page, full[it[0]:it[1]]); err != nil {
			return ItemPage{}, fmt.Errorf("page items: item %d: %w", offset+i, err)
		}
	}
	page.WriteByte(']')
	return ItemPage{
		Items:  page.Bytes(),
		Offset: offset,
		Count:  len(items),
		Total:  total,
		More:   offset+len(items) < total,
	}, nil
}

// seekPointer returns the offset in s of the value at the JSON Pointer
// ptr, found as lookupPointer finds it in a tree (the last of duplicate
// keys wins), without building one. Each token scans the container it is
// in, so a deep pointer into nested containers scans much of s at every
// level: at most 4×len(s) bytes are scanned, then the pointer is refused
// (attack12 G1: 150 tokens into 12 MB took 7 s of CPU).
func seekPointer(s, ptr string) (int, error) {
	at, err := skipSpace(s, 0)
	if err != nil || ptr == "" {
		return at, err
	}
	if ptr[0] != '/' {
		return 0, fmt.Errorf("json pointer %q does not start with /", ptr)
	}
	budget := 4*len(s) + 1<<10
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		found, end := -1, 0
		switch s[at] {
		case '[':
			want, err := strconv.Atoi(tok)
			if err != nil || want < 0 || (len(tok) > 1 && tok[0] == '0') {
				return 0, fmt.Errorf("json pointer %q: no item %q", ptr, tok)
			}
			if found, err = nthItem(s, at, want); err != nil {
				return 0, err
			}
			if found < 0 {
				return 0, fmt.Errorf("json pointer %q: no item %q", ptr, tok)
			}
			end = found // the items before it are all it scanned
		case '{':
			end, err = eachMember(s, at, func(key string, start int) {
				if key == tok {
					found = start // the last of duplicate keys wins, as in JSON.parse
				}
			})
			if err != nil {
				return 0, err
			}
			if found < 0 {
				return 0, fmt.Errorf("json pointer %q: no field %q", ptr, tok)
			}
		default:
			return 0, fmt.Errorf("json pointer %q: %q is inside a scalar", ptr, tok)
		}
		if budget -= end - at; budget < 0 {
			return 0, fmt.Errorf("json pointer %q: %w", ptr, errPointerTooDeep)
		}
		at = found
	}
	return at, nil
}

// errPointerTooDeep refuses a pointer whose seek would scan the result
// more than four times.
var errPointerTooDeep = errors.New("it reaches too deep into nested objects of this result to page in one read; return the array nearer the top of the result")

// nthItem returns the offset of item n of the array at s[at], or -1 when
// it has fewer; it scans only the items before it.
func nthItem(s string, at, n int) (int, error) {
	i, err := skipSpace(s, at+1)
	if err != nil || s[i] == ']' {
		return -1, err
	}
	for k := 0; ; k++ {
		if k == n {
			return i, nil
		}
		end, err := skipValue(s, i)
		if err != nil {
			return -1, err
		}
		if i, err = skipSpace(s, end); err != nil {
			return -1, err
		}
		switch s[i] {
		case ']':
			return -1, nil
		case ',':
			if i, err = skipSpace(s, i+1); err != nil {
				return -1, err
			}
		default:
			return -1, &SyntaxError{Offset: i, Msg: "expected , or ] after an array item"}
		}
	}
}

// eachItem calls fn with the extent of each item of the array at s[at],
// and returns the offset past the array.
func eachItem(s string, at int, fn func(start, end int) error) (int, error) {
	i, err := skipSpace(s, at+1)
	if err != nil {
		return i, err
	}
	if s[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := skipValue(s, i)
		if err != nil {
			return end, err
		}
		if err := fn(i, end); err != nil {
			return end, err
		}
		if i, err = skipSpace(s, end); err != nil {
			return i, err
		}
		switch s[i] {
		case ']':
			return i + 1, nil
		case ',':
			if i, err = skipSpace(s, i+1); err != nil {
				return i, err
			}
		default:
			return i, &SyntaxError{Offset: i, Msg: "expected , or ] after an array item"}
		}
	}
}

// eachMember calls fn with each member's decoded key and the offset of
// its value, for the object at s[at], and returns the offset past it.
func eachMember(s string, at int, fn func(key string, start int)) (int, error) {
	i, err := skipSpace(s, at+1)
	if err != nil {
		return i, err
	}
	if s[i] == '}' {
		return i + 1, nil
	}
	for {
		if s[i] != '"' {
			return i, &SyntaxError{Offset: i, Msg: "expected a key"}
		}
		p := parser{s: s, i: i}
		key, err := p.string()
		if err != nil {
			return p.i, err
		}
		if i, err = skipSpace(s, p.i); err != nil {
			return i, err
		}
		if s[i] != ':' {
			return i, &SyntaxError{Offset: i, Msg: "expected : after a key"}
		}
		if i, err = skipSpace(s, i+1); err != nil {
			return i, err
		}
		end, err := skipValue(s, i)
		if err != nil {
			return end, err
		}
		fn(key, i)
		if i, err = skipSpace(s, end); err != nil {
			return i, err
		}
		switch s[i] {
		case '}':
			return i + 1, nil
		case ',':
			if i, err = skipSpace(s, i+1); err != nil {
				return i, err
			}
		default:
			return i, &SyntaxError{Offset: i, Msg: "expected , or } after an object member"}
		}
	}
}

// skipSpace returns the offset of the next byte of s from i that is not
// white space; there must be one.
func skipSpace(s string, i int) (int, error) {
	for ; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i, nil
		}
	}
	return i, &SyntaxError{Offset: i, Msg: "unexpected end of JSON"}
}

// skipValue returns the offset just past the value that starts at s[i].
// It checks the brackets, not the grammar: the items it delimits are
// parsed whole, and the rest of a stored result was valid when stored.
func skipValue(s string, i int) (int, error) {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; ; i++ {
				i = stringStop(s, i)
				if i >= len(s) {
					return i, &SyntaxError{Offset: i, Msg: "unterminated string"}
				}
				if s[i] == '"' {
					break
				}
				if s[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > maxNesting {
				return i, &SyntaxError{Offset: i, Msg: "exceeded max depth"}
			}
			continue
		case ']', '}':
			if depth == 0 {
				return i, nil // the end of a scalar item or member
			}
			depth--
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i, nil
			}
			continue
		default:
			continue
		}
		if depth == 0 {
			return i + 1, nil
		}
	}
	if depth > 0 {
		return i, &SyntaxError{Offset: i, Msg: "unexpected end of JSON"}
	}
	return i, nil
}
