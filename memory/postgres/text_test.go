package postgres

import (
	"reflect"
	"testing"

	"github.com/codecell/codecell/memory"
)

// TestPgArgs: strings in any form a statement takes them become text
// PostgreSQL holds; bytes and other values are left alone, and args
// itself is not changed.
func TestPgArgs(t *testing.T) {
	s := "a\x00b"
	layer := memory.Layer("x\x00")
	in := []any{"plain", s, &s, []string{"ok", "c\xffd"}, layer, []byte("bytes\x00kept"), int64(7), nil, (*string)(nil)}
	orig := append([]any(nil), in...)
	got := pgArgs(in)
	fixed := "a\uFFFDb"
	want := []any{"plain", fixed, &fixed, []string{"ok", "c\uFFFDd"}, "x\uFFFD", []byte("bytes\x00kept"), int64(7), nil, (*string)(nil)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pgArgs = %#v\nwant %#v", got, want)
	}
	if !reflect.DeepEqual(in, orig) || s != "a\x00b" {
		t.Errorf("pgArgs changed its arguments: %#v", in)
	}
	clean := []any{"a", int64(1)}
	if got := pgArgs(clean); &got[0] != &clean[0] {
		t.Error("pgArgs copied arguments that needed no change")
	}
}
