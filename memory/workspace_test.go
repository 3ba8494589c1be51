package memory

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestValidatePath(t *testing.T) {
	good := []string{"a", "notes/todo.md", "a b/c-d_e.f+g@h=i,j", strings.Repeat("x", 128), "a/b/c/d"}
	for _, p := range good {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	bad := map[string]string{
		"":                             "empty",
		"/etc/passwd":                  "absolute",
		"../x":                         "..",
		"a/../b":                       "..",
		"./a":                          `"."`,
		"a//b":                         "empty segment",
		"a/":                           "ends with a slash",
		`a\b`:                          "backslash",
		"a\x00b":                       "NUL",
		"a\nb":                         `'\n'`,
		"a*b":                          `'*'`,
		strings.Repeat("x", 129):       "segment of 129 bytes",
		strings.Repeat("a/", 17) + "a": "segments deep",
		strings.Repeat("x", 257):       "257 bytes",
		" a":                           "space",
		"\xff":                         "UTF-8",
		"é":                            `'é'`,
	}
	for p, want := range bad {
		err := ValidatePath(p)
		var pe *PathError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPath) {
			t.Errorf("ValidatePath(%q) = %v, want a *PathError", p, err)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ValidatePath(%q) = %q, want it to mention %q", p, err, want)
		}
	}
}

func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{"a", "a/b", "../a", "a//b", "/a", "a\x00", "a/./b"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidatePath(p) != nil {
			return
		}
		// An accepted path is relative, clean and free of dot segments.
		if strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.ContainsRune(p, 0) || strings.ContainsRune(p, '\\') {
			t.Fatalf("accepted %q", p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "." || seg == ".." || seg == "" {
				t.Fatalf("accepted %q", p)
			}
		}
	})
}
