package filter

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestPageTextCutsNoValue: pages of text read one after another, of any
// length, join into the text, and no page starts or ends inside an e-mail
// address or a card number (each half would pass the filter unseen), even
// a page asked to start inside one.
func TestPageTextCutsNoValue(t *testing.T) {
	var b strings.Builder
	for i := range 120 {
		fmt.Fprintf(&b, "row %d: ada.lovelace%04d@northwind.example paid with 4111 1111 1111 1111; é\n", i, i)
	}
	full := []byte(b.String())
	values := ScanString(string(full))
	if len(values) < 240 {
		t.Fatalf("the detectors found %d values", len(values))
	}
	inside := func(i int) bool {
		for _, m := range values {
			if m.Start < i && i < m.End {
				return true
			}
		}
		return false
	}
	for _, length := range []int{5, 40, 1000, 16 << 10} {
		var joined []byte
		for offset, pages := 0, 0; offset < len(full); pages++ {
			p, err := PageText(full, offset, length)
			if err != nil {
				t.Fatalf("length %d, offset %d: %v", length, offset, err)
			}
			if p.Offset != offset || p.Next <= offset || inside(p.Next) {
				t.Fatalf("length %d: the page at %d is [%d, %d)", length, offset, p.Offset, p.Next)
			}
			joined = append(joined, p.Data...)
			offset = p.Next
		}
		if !bytes.Equal(joined, full) {
			t.Fatalf("length %d: the pages do not join into the text", length)
		}
	}
	// Asked to start inside an address, a page starts at the address.
	m := values[len(values)/2]
	p, err := PageText(full, m.Start+3, 100)
	if err != nil || p.Offset != m.Start {
		t.Fatalf("a page asked at %d, inside [%d, %d): %+v, %v", m.Start+3, m.Start, m.End, p, err)
	}
	if _, err := PageText(full, len(full)+1, 10); !errors.Is(err, ErrPageRange) {
		t.Fatalf("past the end: %v", err)
	}
}
