package filter

import (
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// TestFoldFollowsJSCase checks that the fold of every rune is the fold of
// its full upper and lower case (x/text's mappings, JavaScript's
// toUpperCase and toLowerCase), and that specialFolds holds CaseFolding.txt's
// F entries (x/text's full folding) (attack25 F1, F3).
func TestFoldFollowsJSCase(t *testing.T) {
	upper, lower, full := cases.Upper(language.Und), cases.Lower(language.Und), cases.Fold()
	bad := 0
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		want := string(foldString(s))
		for _, c := range []string{upper.String(s), lower.String(s)} {
			if got := string(foldString(c)); got != want && bad < 20 {
				bad++
				t.Errorf("U+%04X %q: fold %+q, of its case change %q %+q", r, s, want, c, got)
			}
		}
		if f := full.String(s); utf8.RuneCountInString(f) > 1 && specialFolds[r] != f {
			t.Errorf("U+%04X: specialFolds %+q, CaseFolding %+q", r, specialFolds[r], f)
		}
		if lu := unicode.ToLower(unicode.ToUpper(r)); lu != unicode.ToLower(r) && specialFolds[r] == "" {
			t.Errorf("U+%04X: not in specialFolds, its upper case lower-cases to U+%04X", r, lu)
		}
		if len(want) > maxFoldGrowth*len(s) {
			t.Errorf("U+%04X: folds to %d bytes from %d", r, len(want), len(s))
		}
	}
	for r := range specialFolds {
		if !hasSpecialFold(r) {
			t.Errorf("U+%04X: in specialFolds, not in hasSpecialFold's ranges", r)
		}
	}
	// Texts as programs change them, a final sigma among them.
	for _, s := range []string{"Hauptstraße 17", "İstiklal Caddesi 42", "Οδός Αγίου Σπυρίδωνος 12", "ﬁnal ﬂow", "Weißbier-Geheimnis-2024"} {
		want := string(foldString(s))
		for _, c := range []string{upper.String(s), lower.String(s)} {
			if got := string(foldString(c)); got != want {
				t.Errorf("%q: fold %q, of %q %q", s, want, c, got)
			}
		}
	}
	// A byte that is not UTF-8 folds as its Latin-1 character.
	if got, want := string(foldString("Hauptstra\xdfe 17")), string(foldString("HAUPTSTRASSE 17")); got != want {
		t.Errorf("Latin-1 byte: fold %q, want %q", got, want)
	}
}
