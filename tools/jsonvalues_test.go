package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

func TestJSONValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int
	}{
		{`1`, 1},
		{`{}`, 1},
		{` [ ] `, 1},
		{`[[],{ }]`, 3},
		{`{"a":1,"b":[1,2,3]}`, 6},
		{`"a,b,{[c"`, 1},
		{`"a\",{["`, 1},
		{`[{},{},{}]`, 4},
		{`{"a":{"b":[{},[[]],"x,y"]}}`, 7},
	} {
		if got := tools.JSONValues([]byte(c.in), math.MaxInt); got != c.want {
			t.Errorf("JSONValues(%s) = %d, want %d", c.in, got, c.want)
		}
		// Fed a byte at a time, as a message arrives in pieces.
		var vc tools.ValueCounter
		for i := range len(c.in) {
			vc.Write([]byte(c.in[i : i+1]))
		}
		if got := vc.Values(); got != c.want {
			t.Errorf("ValueCounter(%s) = %d, want %d", c.in, got, c.want)
		}
	}
	many := []byte("[" + strings.Repeat("{},", 1<<20) + "{}]")
	if got := tools.JSONValues(many, 1000); got != 1001 {
		t.Errorf("JSONValues of 2^20 objects, limit 1000 = %d, want 1001", got)
	}
}

// TestCallHoldsDecodedResult (issue 19, attack9 D7): every tool's result
// is held as what it decodes into — ResultCopies of its bytes and
// DecodedValueBytes a value — before it is handed on, and a result the
// holder refuses is the call's error.
func TestCallHoldsDecodedResult(t *testing.T) {
	t.Parallel()
	result := `[{},{},{}]`
	r := tools.NewRegistry()
	if err := r.Register(tools.Tool{Name: "x.dense", Summary: "dense", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(result), nil
	}}); err != nil {
		t.Fatal(err)
	}
	var held []int64
	refuse := errors.New("refused")
	ctx := tools.WithDecodedHolder(t.Context(), func(_ context.Context, n int64) error {
		held = append(held, n)
		if n > 100 {
			return refuse
		}
		return nil
	})
	out, err := r.Call(ctx, "x.dense", nil)
	if want := int64(tools.ResultCopies*len(result) + 4*tools.DecodedValueBytes); !errors.Is(err, refuse) || len(held) != 1 || held[0] != want {
		t.Fatalf("call of a result of 4 values: %s, %v; held %v, want [%d]", out, err, held, want)
	}
	// Without a holder (a call outside the engine), nothing is held.
	if out, err := r.Call(t.Context(), "x.dense", nil); err != nil || string(out) != result {
		t.Fatalf("call without a holder: %s, %v", out, err)
	}
}

// TestValueCounterPieces: fed in pieces of any size, ValueCounter counts
// what JSONValues counts of the whole, strings with escapes, escaped
// quotes and runs of backslashes included (it skips through strings).
func TestValueCounterPieces(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	atoms := []string{`{`, `}`, `[`, `]`, `,`, `:`, ` `, `1`, `"a,b"`, `"\""`, `"\\"`, `"\\\""`, `"{[,"`, `"x\\\\"`, `"\u0022,"`, "\"\\\n\"", `""`}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(atoms[rng.IntN(len(atoms))])
		}
		text := b.String()
		want := tools.JSONValues([]byte(text), math.MaxInt)
		var vc tools.ValueCounter
		for rest := text; rest != ""; {
			n := min(1+rng.IntN(8), len(rest))
			vc.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		if got := vc.Values(); got != want {
			t.Fatalf("ValueCounter(%s) in pieces = %d, JSONValues %d", text, got, want)
		}
	}
}
