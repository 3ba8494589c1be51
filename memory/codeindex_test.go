package memory

import (
	"slices"
	"testing"
)

func TestCodeSetApply(t *testing.T) {
	code := func(v uint64) []uint64 { return []uint64{v, ^v} }
	cs := &CodeSet{words: 2}
	cs.apply([]codeEntry{{id: 2, layer: 1, code: code(2)}, {id: 4, layer: 1, code: code(4)}, {id: 6, layer: 1, code: code(6)}}, nil)
	cs.apply([]codeEntry{{id: 1, layer: 0, code: code(1)}, {id: 4, layer: 3, code: code(40)}, {id: 9, layer: 2, code: code(9)}}, []int64{6, 7})
	if want := []int64{1, 2, 4, 9}; !slices.Equal(cs.ids, want) {
		t.Fatalf("ids %v, want %v", cs.ids, want)
	}
	if want := []uint8{0, 1, 3, 2}; !slices.Equal(cs.layers, want) {
		t.Fatalf("layers %v, want %v", cs.layers, want)
	}
	var wantCodes []uint64
	for _, v := range []uint64{1, 2, 40, 9} {
		wantCodes = append(wantCodes, code(v)...)
	}
	if !slices.Equal(cs.codes, wantCodes) {
		t.Fatalf("codes %v, want %v", cs.codes, wantCodes)
	}
	cs.apply([]codeEntry{{id: 10, code: code(10)}}, nil) // append
	if cs.ids[len(cs.ids)-1] != 10 || len(cs.codes) != 10 {
		t.Fatalf("after append: %v %v", cs.ids, cs.codes)
	}
}
