package upstream_test

import (
	"testing"

	"github.com/codecell/codecell/tools/upstream"
)

// TestTrustAnnotations: a server's annotations are shown as hints, and
// decide nothing unless its configuration trusts them.
func TestTrustAnnotations(t *testing.T) {
	t.Parallel()
	trusted := fake(t, "serve")
	trusted.TrustAnnotations = true
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve"), "trusted": trusted})
	for _, tc := range []struct {
		tool                string
		knownRO, mayDestroy bool
	}{
		{"fake.get_sum_2", false, true},          // says read-only, untrusted
		{"fake.create_entities", false, true},    // says nothing
		{"trusted.get_sum_2", true, false},       // says read-only, trusted
		{"trusted.create_entities", false, true}, // MCP's defaults
	} {
		tl, ok := e.reg.Get(tc.tool)
		if !ok {
			t.Fatalf("no %s", tc.tool)
		}
		a := tl.Annotations
		if a.KnownReadOnly() != tc.knownRO || a.MayDestroy() != tc.mayDestroy || a.Untrusted == trustedName(tc.tool) {
			t.Errorf("%s: %+v: known read-only %v, may destroy %v", tc.tool, a, a.KnownReadOnly(), a.MayDestroy())
		}
	}
	// The hint itself is kept, for the catalogue to show.
	if sum, _ := e.reg.Get("fake.get_sum_2"); !sum.Annotations.ReadOnly {
		t.Errorf("the server's read-only hint is lost: %+v", sum.Annotations)
	}
}

func trustedName(tool string) bool { return len(tool) > 8 && tool[:8] == "trusted." }
