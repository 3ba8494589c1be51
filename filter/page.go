package filter

import (
	"encoding/json"
	"errors"
	"fmt"
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
// Pointer pointer ("" for a top-level array) in full. The page is not cut
// to a budget; pass Items to Limit for that.
func PageItems(full json.RawMessage, pointer string, offset, count int) (ItemPage, error) {
	root, err := parseJSON(full)
	if err != nil {
		return ItemPage{}, fmt.Errorf("page items: %w", err)
	}
	arr, err := lookupPointer(&root, pointer)
	if err != nil {
		return ItemPage{}, fmt.Errorf("page items: %w", err)
	}
	if arr.kind != kindArray {
		return ItemPage{}, fmt.Errorf("page items: %q is not an array", pointer)
	}
	total := len(arr.kids)
	if offset < 0 || offset > total || (offset == total && total > 0) {
		return ItemPage{}, fmt.Errorf("page items: offset %d of %d items: %w", offset, total, ErrPageRange)
	}
	if count <= 0 {
		return ItemPage{}, fmt.Errorf("page items: count %d: %w", count, ErrPageRange)
	}
	end := min(total, offset+count)
	page := node{kind: kindArray, kids: arr.kids[offset:end]}
	return ItemPage{
		Items:  appendJSON(nil, &page),
		Offset: offset,
		Count:  end - offset,
		Total:  total,
		More:   end < total,
	}, nil
}
