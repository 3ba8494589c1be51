package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
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
	p, err := PageItems(full, "/data/rows", 3, 4, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Items) != "[3,4,5,6]" || p.Offset != 3 || p.Count != 4 || p.Total != 10 || !p.More {
		t.Errorf("page = %+v (%s)", p, p.Items)
	}
	p, err = PageItems(full, "/data/rows", 8, 4, 1<<30)
	if err != nil || string(p.Items) != "[8,9]" || p.More || p.Count != 2 {
		t.Errorf("last page = %+v (%s), %v", p, p.Items, err)
	}
	p, err = PageItems(full, "/a~1b", 1, 1, 1<<30)
	if err != nil || string(p.Items) != `[{"x":2}]` {
		t.Errorf("escaped pointer: %+v, %v", p, err)
	}
	top, err := PageItems(json.RawMessage(`["a","b"]`), "", 0, 10, 1<<30)
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
		_, err := PageItems(full, tc.ptr, tc.off, tc.n, 1<<30)
		if err == nil || errors.Is(err, ErrPageRange) != tc.wantRange {
			t.Errorf("PageItems(%q, %d, %d) = %v", tc.ptr, tc.off, tc.n, err)
		}
	}
}

// pageItemsTree is PageItems as it was: through a tree of the whole
// document. The scan must give what it gave.
func pageItemsTree(full json.RawMessage, pointer string, offset, count int) (ItemPage, error) {
	root, err := parseJSON(full)
	if err != nil {
		return ItemPage{}, err
	}
	arr, err := lookupPointer(&root, pointer)
	if err != nil {
		return ItemPage{}, err
	}
	if arr.kind != kindArray {
		return ItemPage{}, errors.New("not an array")
	}
	total := len(arr.kids)
	if offset < 0 || offset > total || (offset == total && total > 0) || count <= 0 {
		return ItemPage{}, ErrPageRange
	}
	end := min(total, offset+count)
	page := node{kind: kindArray, kids: arr.kids[offset:end]}
	return ItemPage{Items: appendJSON(nil, &page), Offset: offset, Count: end - offset, Total: total, More: end < total}, nil
}

var pageItemsSeeds = []struct {
	doc, ptr string
	off, n   int
}{
	{`{"data":{"rows":[0,1,2,3,4,5,6,7,8,9]},"a/b":[{"x":1},{"x":2}]}`, "/data/rows", 3, 4},
	{`{"a/b":[{"x":1},{"x":2}]}`, "/a~1b", 1, 5},
	{` [ "x\"]" , {"k":[1,2,{"z":"}"}]} , -1.5e3 , true , null ] `, "", 0, 10},
	{`{"k":[1],"k":[2,3],"\u006b":[4,5,6]}`, "/k", 1, 1},
	{`{"a":[[1,[2]],[3]]}`, "/a/0/1", 0, 1},
	{`{"a":[[1,[2]],[3]]}`, "/a/01", 0, 1},
	{`{"a":{"":[7]}}`, "/a/", 0, 1},
	{`[]`, "", 0, 1},
	{`{"a":5}`, "/a", 0, 1},
	{`{"a":5}`, "/a/b", 0, 1},
	{`[1,2]`, "/5", 0, 1},
	{`{"s":["\ud83d\ude00","a\\b",""]}`, "/s", 0, 3},
}

// TestPageItemsAsTree: the scan pages as the tree did (attack10 E7).
func TestPageItemsAsTree(t *testing.T) {
	t.Parallel()
	for _, c := range pageItemsSeeds {
		comparePageItems(t, c.doc, c.ptr, c.off, c.n)
	}
}

func FuzzPageItems(f *testing.F) {
	for _, c := range pageItemsSeeds {
		f.Add(c.doc, c.ptr, c.off, c.n)
	}
	f.Fuzz(func(t *testing.T, doc, ptr string, off, n int) {
		if !json.Valid([]byte(doc)) {
			return // stored results are valid JSON
		}
		comparePageItems(t, doc, ptr, off, n)
	})
}

func comparePageItems(t *testing.T, doc, ptr string, off, n int) {
	t.Helper()
	want, werr := pageItemsTree(json.RawMessage(doc), ptr, off, n)
	got, gerr := PageItems(json.RawMessage(doc), ptr, off, n, 1<<30)
	if errors.Is(gerr, errPointerTooDeep) {
		return // the tree's walk was not bounded
	}
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s %q [%d,+%d]: scan err %v, tree err %v", doc, ptr, off, n, gerr, werr)
	}
	if gerr == nil {
		// The page's items are the bytes they are, compacted; the tree
		// wrote its own escapes.
		items, err := parseJSON(got.Items)
		if err != nil {
			t.Fatalf("%s %q [%d,+%d]: page %s: %v", doc, ptr, off, n, got.Items, err)
		}
		got.Items = appendJSON(nil, &items)
	}
	if werr == nil && (string(got.Items) != string(want.Items) || got.Offset != want.Offset || got.Count != want.Count || got.Total != want.Total || got.More != want.More) {
		t.Fatalf("%s %q [%d,+%d]: scan %+v %s, tree %+v %s", doc, ptr, off, n, got, got.Items, want, want.Items)
	}
	if werr != nil && errors.Is(werr, ErrPageRange) != errors.Is(gerr, ErrPageRange) {
		t.Fatalf("%s %q [%d,+%d]: scan err %v, tree err %v", doc, ptr, off, n, gerr, werr)
	}
}

// TestPageItemsBuildsThePageOnly (attack10 E7): one item of a result of two
// million values cost a tree of all of them, about 125 MB a read. The
// scan holds the text and the page. Not parallel: it reads the process's
// allocation count.
func TestPageItemsBuildsThePageOnly(t *testing.T) {
	doc := []byte("[" + strings.Repeat("0,", 2_000_000) + "0]")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := PageItems(doc, "", 5, 1, 1<<30)
	runtime.ReadMemStats(&after)
	if err != nil || string(p.Items) != "[0]" || p.Total != 2_000_001 {
		t.Fatalf("page: %+v %s, %v", p, p.Items, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*uint64(len(doc)) {
		t.Errorf("paging one item of %d bytes allocated %d bytes", len(doc), got)
	}
}

// TestPageItemsDeepPointer (attack12 G1): each token of a pointer scanned
// the container it is in, found value included, which the next token
// scanned again: a pointer of 150 tokens into 12 MB of nested objects took
// 7 s of CPU. An array's item is reached without scanning it; objects'
// scans are bounded at four times the result, past which the pointer is
// refused.
func TestPageItemsDeepPointer(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", 1<<20) + `"`
	const depth = 200
	objects := strings.Repeat(`{"a":`, depth) + `[` + big + `]` + strings.Repeat(`}`, depth)
	ptr := strings.Repeat("/a", depth)
	if _, err := PageItems(json.RawMessage(objects), ptr, 0, 1, 1<<30); !errors.Is(err, errPointerTooDeep) {
		t.Errorf("a pointer %d objects deep into %d bytes: %v, want it refused", depth, len(objects), err)
	}
	arrays := strings.Repeat(`[`, depth) + big + strings.Repeat(`]`, depth)
	p, err := PageItems(json.RawMessage(arrays), strings.Repeat("/0", depth-1), 0, 1, 1<<30)
	if err != nil || p.Total != 1 || !strings.HasPrefix(string(p.Items), `["xxx`) {
		t.Errorf("a pointer %d arrays deep: %+v, %v", depth-1, p, err)
	}
	shallow := `{"data":{"rows":[` + big + `,1]}}`
	if p, err := PageItems(json.RawMessage(shallow), "/data/rows", 1, 1, 1<<30); err != nil || string(p.Items) != "[1]" {
		t.Errorf("a pointer two objects deep: %+v, %v", p, err)
	}
}

// TestPageItemsBoundedInBytes (attack13 H1): a page's items were built as
// trees whatever their size, so one item holding a result's million values
// cost about 63 MiB a read. A page holds the items that fit in its bytes;
// an item larger than that is refused, saying how to read it.
func TestPageItemsBoundedInBytes(t *testing.T) {
	t.Parallel()
	huge := "[[" + strings.Repeat("0,", 1_000_000) + "0]]"
	if _, err := PageItems(json.RawMessage(huge), "", 0, 1, 64<<10); !errors.Is(err, ErrPageRange) || !strings.Contains(err.Error(), "pointer into it") {
		t.Errorf("an item of %d bytes in a page of 64 KiB: %v", len(huge), err)
	}
	rows := json.RawMessage(`["aaaa","bbbb","cccc","dddd"]`)
	p, err := PageItems(rows, "", 1, 3, 13)
	if err != nil || string(p.Items) != `["bbbb","cccc"]` || p.Count != 2 || p.Total != 4 || !p.More {
		t.Errorf("a page of 13 bytes: %+v %s, %v", p, p.Items, err)
	}
	p, err = PageItems(rows, "", 3, 3, 13)
	if err != nil || string(p.Items) != `["dddd"]` || p.More {
		t.Errorf("the last page: %+v %s, %v", p, p.Items, err)
	}
}

// TestPageItemsBuildsNoTree (attack14 I3): the page of attack13 H1 was
// bounded in bytes, but still built as a tree: one item of 131,000 zeros
// (262 KB, within the 256 KiB a page holds) cost about 9 MiB of tree a
// read. The page is its items' bytes. Not parallel: it reads the
// process's allocation count.
func TestPageItemsBuildsNoTree(t *testing.T) {
	doc := []byte("[[" + strings.Repeat("0,", 130_999) + "0]]")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := PageItems(doc, "", 0, 1, 256<<10)
	runtime.ReadMemStats(&after)
	if err != nil || p.Count != 1 || len(p.Items) != len(doc) {
		t.Fatalf("page: %+v %.40s, %v", p, p.Items, err)
	}
	// The text as a string, the page, and what -race adds: about 3 times
	// the item; its tree was 40.
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*uint64(len(doc)) {
		t.Errorf("paging one item of %d bytes allocated %d bytes (%.0f a value)", len(doc), got, float64(got)/131_000)
	}
	spaced := json.RawMessage(`{"rows": [ {"a" : [1, 2]} , "x y" ]}`)
	if p, err := PageItems(spaced, "/rows", 0, 2, 1<<10); err != nil || string(p.Items) != `[{"a":[1,2]},"x y"]` {
		t.Errorf("items with spaces: %s, %v", p.Items, err)
	}
}
