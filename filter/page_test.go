package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func TestPageBytes(t *testing.T) {
	t.Parallel()
	full := []byte(`{"text":"héllo wörld ⟦email:7f3a9c21⟧"}`)
	var got []byte
	off := 0
	for pages := 0; ; pages++ {
		p, err := PageBytes(full, off, 5)
		if err != nil {
			t.Fatal(err)
		}
		if p.Offset != off || p.Total != len(full) || !utf8.Valid(p.Data) || len(p.Data) == 0 {
			t.Fatalf("page at %d: %+v (%q)", off, p, p.Data)
		}
		got = append(got, p.Data...)
		if !p.More {
			break
		}
		off = p.Next
		if pages > len(full) {
			t.Fatal("paging does not end")
		}
	}
	if !bytes.Equal(got, full) {
		t.Fatalf("pages joined = %q", got)
	}
	// An offset inside a rune moves to the next rune.
	i := bytes.Index(full, []byte("é")) + 1
	p, err := PageBytes(full, i, 3)
	if err != nil || p.Offset != i+1 {
		t.Errorf("offset inside a rune: %+v, %v", p, err)
	}
	for _, bad := range [][2]int{{-1, 5}, {len(full), 5}, {0, 0}, {len(full) + 1, 1}} {
		if _, err := PageBytes(full, bad[0], bad[1]); !errors.Is(err, ErrPageRange) {
			t.Errorf("PageBytes(%d, %d) = %v, want ErrPageRange", bad[0], bad[1], err)
		}
	}
}

func TestPageItems(t *testing.T) {
	t.Parallel()
	full := json.RawMessage(`{"data":{"rows":[0,1,2,3,4,5,6,7,8,9]},"a/b":[{"x":1},{"x":2}]}`)
	p, err := PageItems(full, "/data/rows", 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Items) != "[3,4,5,6]" || p.Offset != 3 || p.Count != 4 || p.Total != 10 || !p.More {
		t.Errorf("page = %+v (%s)", p, p.Items)
	}
	p, err = PageItems(full, "/data/rows", 8, 4)
	if err != nil || string(p.Items) != "[8,9]" || p.More || p.Count != 2 {
		t.Errorf("last page = %+v (%s), %v", p, p.Items, err)
	}
	p, err = PageItems(full, "/a~1b", 1, 1)
	if err != nil || string(p.Items) != `[{"x":2}]` {
		t.Errorf("escaped pointer: %+v, %v", p, err)
	}
	top, err := PageItems(json.RawMessage(`["a","b"]`), "", 0, 10)
	if err != nil || string(top.Items) != `["a","b"]` || top.Total != 2 {
		t.Errorf("top-level array: %+v, %v", top, err)
	}
	for _, tc := range []struct {
		ptr       string
		off, n    int
		wantRange bool
	}{
		{"/data", 0, 1, false},        // not an array
		{"/nope", 0, 1, false},        // no such field
		{"data", 0, 1, false},         // not a pointer
		{"/data/rows/x", 0, 1, false}, // inside a scalar
		{"/data/rows", 10, 1, true},
		{"/data/rows", -1, 1, true},
		{"/data/rows", 0, 0, true},
	} {
		_, err := PageItems(full, tc.ptr, tc.off, tc.n)
		if err == nil || errors.Is(err, ErrPageRange) != tc.wantRange {
			t.Errorf("PageItems(%q, %d, %d) = %v", tc.ptr, tc.off, tc.n, err)
		}
	}
}
