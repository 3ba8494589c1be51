package memory

import (
	"testing"
)

// TestWordsEmbedder: deterministic, unit length, and a question in other
// words is closer to its memory than to an unrelated one, which the hash
// part alone does not see.
func TestWordsEmbedder(t *testing.T) {
	e := NewWordsEmbedder()
	if err := CheckEmbedder(e); err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"can I bring my puppy to work",
		"Dogs are allowed in the office on Fridays",
		"The backup job runs nightly at 2am",
		"xq-7731 zzkq", // no word the table knows: the hash part alone
	}
	vs, err := Embed(t.Context(), e, texts)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Embed(t.Context(), e, texts)
	for i := range vs {
		if d := Dot(vs[i], vs[i]); d < 0.999 || d > 1.001 {
			t.Errorf("text %d: |v|² = %v", i, d)
		}
		for j := range vs[i] {
			if vs[i][j] != again[i][j] {
				t.Fatalf("text %d embeds differently twice", i)
			}
		}
	}
	h, _ := Embed(t.Context(), NewHashEmbedder(DefaultDimensions), texts)
	near, far := Dot(vs[0], vs[1]), Dot(vs[0], vs[2])
	hnear, hfar := Dot(h[0], h[1]), Dot(h[0], h[2])
	// The hash embedder alone finds them unrelated (cos -0.02).
	if near <= far || near < 0.15 {
		t.Errorf("cos(question, its memory) %.3f, cos(question, another) %.3f; with the hash embedder alone %.3f, %.3f", near, far, hnear, hfar)
	}
}

func TestUpgradesOffline(t *testing.T) {
	e := NewWordsEmbedder()
	for _, c := range []struct {
		stored string
		e      Embedder
		want   bool
	}{
		{"codecell-hash-v1-384", e, true},
		{"codecell-words-v0-392", e, true},
		{e.Name(), e, false},
		{"codecell-hash-v1-128", e, false}, // chosen, not a default
		{"text-embedding-3-small", e, false},
		{"codecell-hash-v1-384", NewHashEmbedder(384), false}, // configured by hand
		{"", e, false},
	} {
		if got := UpgradesOffline(c.stored, c.e); got != c.want {
			t.Errorf("UpgradesOffline(%q, %s) = %v, want %v", c.stored, c.e.Name(), got, c.want)
		}
	}
}
