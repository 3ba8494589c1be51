package filter

import (
	"unicode"
	"unicode/utf8"
)

// Case folding.
//
// A program changes the case of a value with JavaScript's toUpperCase and
// toLowerCase: full Unicode case mappings, under which a rune may become
// several ("ß" upper-cases to "SS", "İ" lower-cases to "i̇", "ﬁ" to "FI")
// and a final "ς" upper-cases to the "Σ" of every "σ". A value and the
// texts searched for it are folded alike, so the fold maps each rune to
// what its upper- and lower-cased forms map to:
//
//   - a rune with a full case folding of several runes (CaseFolding.txt's
//     F entries) to those runes;
//   - any other rune to the lower case of its upper case, which joins
//     "ς" and "σ", "ſ" and "s", "ı" and "i", "µ" and "μ".
//
// The lower case of the upper case is unicode.ToLower but for a few
// runes: those and the F entries are specialFolds, behind a test of
// ranges, so most runes cost one ToLower as before.
//
// fold(JavaScript's toUpperCase(s)) and fold(toLowerCase(s)) are then
// fold(s) (TestFoldFollowsJSCase checks every rune against x/text's full
// mappings, which are JavaScript's). At most a rune's fold is three times
// its length (ΐ, 2 bytes, folds to 6).

// maxFoldGrowth bounds how many times longer than a text its fold is.
const maxFoldGrowth = 3

// specialFolds are the runes whose fold is not their unicode.ToLower:
// those whose full case folding is several runes (CaseFolding.txt,
// status F), and those whose upper case lower-cases to another rune.
var specialFolds = map[rune]string{
	0x00B5: "\u03bc", 0x0131: "i", 0x017F: "s", 0x0345: "\u03b9", 0x03C2: "\u03c3",
	0x03D0: "\u03b2", 0x03D1: "\u03b8", 0x03D5: "\u03c6", 0x03D6: "\u03c0", 0x03F0: "\u03ba",
	0x03F1: "\u03c1", 0x03F5: "\u03b5", 0x1C80: "\u0432", 0x1C81: "\u0434", 0x1C82: "\u043e",
	0x1C83: "\u0441", 0x1C84: "\u0442", 0x1C85: "\u0442", 0x1C86: "\u044a", 0x1C87: "\u0463",
	0x1C88: "\ua64b", 0x1E9B: "\u1e61", 0x1FBE: "\u03b9",
	0x00DF: "ss", 0x0130: "i\u0307", 0x0149: "\u02bcn", 0x01F0: "j\u030c",
	0x0390: "\u03b9\u0308\u0301", 0x03B0: "\u03c5\u0308\u0301", 0x0587: "\u0565\u0582", 0x1E96: "h\u0331",
	0x1E97: "t\u0308", 0x1E98: "w\u030a", 0x1E99: "y\u030a", 0x1E9A: "a\u02be",
	0x1E9E: "ss", 0x1F50: "\u03c5\u0313", 0x1F52: "\u03c5\u0313\u0300", 0x1F54: "\u03c5\u0313\u0301",
	0x1F56: "\u03c5\u0313\u0342", 0x1F80: "\u1f00\u03b9", 0x1F81: "\u1f01\u03b9", 0x1F82: "\u1f02\u03b9",
	0x1F83: "\u1f03\u03b9", 0x1F84: "\u1f04\u03b9", 0x1F85: "\u1f05\u03b9", 0x1F86: "\u1f06\u03b9",
	0x1F87: "\u1f07\u03b9", 0x1F88: "\u1f00\u03b9", 0x1F89: "\u1f01\u03b9", 0x1F8A: "\u1f02\u03b9",
	0x1F8B: "\u1f03\u03b9", 0x1F8C: "\u1f04\u03b9", 0x1F8D: "\u1f05\u03b9", 0x1F8E: "\u1f06\u03b9",
	0x1F8F: "\u1f07\u03b9", 0x1F90: "\u1f20\u03b9", 0x1F91: "\u1f21\u03b9", 0x1F92: "\u1f22\u03b9",
	0x1F93: "\u1f23\u03b9", 0x1F94: "\u1f24\u03b9", 0x1F95: "\u1f25\u03b9", 0x1F96: "\u1f26\u03b9",
	0x1F97: "\u1f27\u03b9", 0x1F98: "\u1f20\u03b9", 0x1F99: "\u1f21\u03b9", 0x1F9A: "\u1f22\u03b9",
	0x1F9B: "\u1f23\u03b9", 0x1F9C: "\u1f24\u03b9", 0x1F9D: "\u1f25\u03b9", 0x1F9E: "\u1f26\u03b9",
	0x1F9F: "\u1f27\u03b9", 0x1FA0: "\u1f60\u03b9", 0x1FA1: "\u1f61\u03b9", 0x1FA2: "\u1f62\u03b9",
	0x1FA3: "\u1f63\u03b9", 0x1FA4: "\u1f64\u03b9", 0x1FA5: "\u1f65\u03b9", 0x1FA6: "\u1f66\u03b9",
	0x1FA7: "\u1f67\u03b9", 0x1FA8: "\u1f60\u03b9", 0x1FA9: "\u1f61\u03b9", 0x1FAA: "\u1f62\u03b9",
	0x1FAB: "\u1f63\u03b9", 0x1FAC: "\u1f64\u03b9", 0x1FAD: "\u1f65\u03b9", 0x1FAE: "\u1f66\u03b9",
	0x1FAF: "\u1f67\u03b9", 0x1FB2: "\u1f70\u03b9", 0x1FB3: "\u03b1\u03b9", 0x1FB4: "\u03ac\u03b9",
	0x1FB6: "\u03b1\u0342", 0x1FB7: "\u03b1\u0342\u03b9", 0x1FBC: "\u03b1\u03b9", 0x1FC2: "\u1f74\u03b9",
	0x1FC3: "\u03b7\u03b9", 0x1FC4: "\u03ae\u03b9", 0x1FC6: "\u03b7\u0342", 0x1FC7: "\u03b7\u0342\u03b9",
	0x1FCC: "\u03b7\u03b9", 0x1FD2: "\u03b9\u0308\u0300", 0x1FD3: "\u03b9\u0308\u0301", 0x1FD6: "\u03b9\u0342",
	0x1FD7: "\u03b9\u0308\u0342", 0x1FE2: "\u03c5\u0308\u0300", 0x1FE3: "\u03c5\u0308\u0301", 0x1FE4: "\u03c1\u0313",
	0x1FE6: "\u03c5\u0342", 0x1FE7: "\u03c5\u0308\u0342", 0x1FF2: "\u1f7c\u03b9", 0x1FF3: "\u03c9\u03b9",
	0x1FF4: "\u03ce\u03b9", 0x1FF6: "\u03c9\u0342", 0x1FF7: "\u03c9\u0342\u03b9", 0x1FFC: "\u03c9\u03b9",
	0xFB00: "ff", 0xFB01: "fi", 0xFB02: "fl", 0xFB03: "ffi",
	0xFB04: "ffl", 0xFB05: "st", 0xFB06: "st", 0xFB13: "\u0574\u0576",
	0xFB14: "\u0574\u0565", 0xFB15: "\u0574\u056b", 0xFB16: "\u057e\u0576", 0xFB17: "\u0574\u056d",
}

// hasSpecialFold reports whether r may be in specialFolds: a test of
// ranges before the map lookup, which most runes skip.
func hasSpecialFold(r rune) bool {
	switch {
	case r < 0xB5:
		return false
	case r < 0x3D0:
		return r == 0xB5 || r == 0xDF || r == 0x130 || r == 0x131 || r == 0x149 || r == 0x17F ||
			r == 0x1F0 || r == 0x345 || r == 0x390 || r == 0x3B0 || r == 0x3C2
	case r <= 0x3F5:
		return true
	case r < 0x1C80:
		return r == 0x587
	case r <= 0x1C88:
		return true
	case r < 0x1E96:
		return false
	case r <= 0x1FFC:
		return true
	}
	return r >= 0xFB00 && r <= 0xFB17
}

// foldedRune appends the fold of the non-ASCII rune r to dst.
func foldedRune(dst []byte, r rune) []byte {
	if hasSpecialFold(r) {
		if f, ok := specialFolds[r]; ok {
			return append(dst, f...)
		}
	}
	return utf8.AppendRune(dst, unicode.ToLower(r))
}
