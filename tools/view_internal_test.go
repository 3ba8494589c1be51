package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

func TestViewCacheIsBounded(t *testing.T) {
	r := NewRegistry()
	r.views.max = 4
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	for i := range 10 {
		if err := r.RegisterScoped(fmt.Sprintf("p%d", i), Tool{Name: "skills.x", Summary: "x", Handler: h}); err != nil {
			t.Fatal(err)
		}
	}
	first := r.View(Caller{Principal: "p0"})
	for i := range 10 {
		r.View(Caller{Principal: fmt.Sprintf("p%d", i)})
		r.View(Caller{Principal: "p0"}) // keep p0 recently used
		if n := r.views.cached(); n > 4 {
			t.Fatalf("%d views cached, want at most 4", n)
		}
	}
	if r.View(Caller{Principal: "p0"}) != first {
		t.Error("the most recently used view was evicted")
	}
	if r.View(Caller{Principal: "p1"}) == nil {
		t.Error("an evicted view is not rebuilt")
	}
}
