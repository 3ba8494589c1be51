package upstream

import "testing"

func TestProseOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# Everything Server – Server Instructions\n\nThis server exercises every feature. It also…", "This server exercises every feature. It also…"},
		{"---\n## Notes\nReads files.", "Reads files."},
		{"Plain instructions.", "Plain instructions."},
		{"# Only a heading\n\n", ""},
		{"", ""},
	} {
		if got := proseOf(tc.in); got != tc.want {
			t.Errorf("proseOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
