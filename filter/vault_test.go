package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

func newTestVault(tb testing.TB, opts VaultOptions) *Vault {
	tb.Helper()
	v, err := NewVault(fuzzKey, "local", opts)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

var tokenShape = regexp.MustCompile(`^⟦[a-z_]+:[0-9a-f]{8}⟧$`)

func TestTokenizeStable(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{})
	a := v.Tokenize(ClassEmail, "ada@example.com", nil)
	if !tokenShape.MatchString(a) || !strings.HasPrefix(a, "⟦email:") {
		t.Fatalf("token %q does not have the shape ⟦email:xxxxxxxx⟧", a)
	}
	if b := v.Tokenize(ClassEmail, "ada@example.com", nil); b != a {
		t.Errorf("same value, tokens %q and %q", a, b)
	}
	// Another vault under the same key gives the same token ...
	if b := newTestVault(t, VaultOptions{}).Tokenize(ClassEmail, "ada@example.com", nil); b != a {
		t.Errorf("same key, tokens %q and %q", a, b)
	}
	// ... another key does not, nor another class or value.
	other, _ := NewKey()
	v2, _ := NewVault(other, "local", VaultOptions{})
	for _, b := range []string{
		v2.Tokenize(ClassEmail, "ada@example.com", nil),
		v.Tokenize(ClassPhone, "ada@example.com", nil),
		v.Tokenize(ClassEmail, "bob@example.com", nil),
	} {
		if b == a {
			t.Errorf("token %q repeated for a different key, class or value", b)
		}
	}
	// A zero key is not what made it.
	zero := newZeroKeyVault(t)
	if zero.Tokenize(ClassEmail, "ada@example.com", nil) == a {
		t.Error("token equals the one under a zero key")
	}
}

// TestTokensPerPrincipal: the same value gets unrelated tokens for two
// principals under one installation key, the same token in two sessions
// of one principal, and a principal's vault resolves none of another's
// tokens.
func TestTokensPerPrincipal(t *testing.T) {
	t.Parallel()
	newVault := func(principal string) *Vault {
		v, err := NewVault(fuzzKey, principal, VaultOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a1, a2, b := newVault("alice"), newVault("alice"), newVault("bob")
	ta := a1.Tokenize(ClassEmail, "ada@example.com", nil)
	if got := a2.Tokenize(ClassEmail, "ada@example.com", nil); got != ta {
		t.Errorf("two sessions of alice: %s and %s", ta, got)
	}
	tb := b.Tokenize(ClassEmail, "ada@example.com", nil)
	if tb == ta || tb[len("⟦email:"):][:4] == ta[len("⟦email:"):][:4] {
		t.Errorf("alice and bob: %s and %s", ta, tb)
	}
	// Principal names that share a prefix get unrelated keys too.
	if newVault("alice2").Tokenize(ClassEmail, "ada@example.com", nil) == ta {
		t.Error("alice2 shares alice's tokens")
	}
	_, err := b.Resolve(json.RawMessage(`{"to":"`+ta+`"}`), "mail.send")
	if !errors.Is(err, ErrUnknownToken) || strings.Contains(err.Error(), "ada@example.com") {
		t.Errorf("bob resolving alice's token: %v", err)
	}
	if a1.Principal() != "alice" {
		t.Errorf("Principal = %q", a1.Principal())
	}
	if _, err := NewVault(fuzzKey, "", VaultOptions{}); err == nil {
		t.Error("NewVault accepted an empty principal")
	}
	// The derivation is HKDF-Expand over SHA-256, pinned here so that a
	// change of it (which changes every token) is deliberate.
	k, err := fuzzKey.forPrincipal("alice")
	if err != nil {
		t.Fatal(err)
	}
	if id := k.ID(); id != pinnedAliceKeyID {
		t.Errorf("alice's key has ID %s, want %s", id, pinnedAliceKeyID)
	}
}

func newZeroKeyVault(tb testing.TB) *Vault {
	tb.Helper()
	v, err := NewVault(Key{}, "local", VaultOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func TestResolve(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{})
	email := v.Tokenize(ClassEmail, "ada@example.com", []string{"crm.get_customer"})
	quote := v.Tokenize(ClassSecret, `say "hi"\ now`+"\n", nil)
	card := v.tokenize(ClassCard, "4111111111111111", true, nil)
	cases := []struct {
		name, args, want string
	}{
		{"no tokens", `{"a": 1, "b": "x"}`, `{"a": 1, "b": "x"}`},
		{"whole string", `{"to":"` + email + `"}`, `{"to":"ada@example.com"}`},
		{"embedded", `{"body":"Hello ` + email + `, bye ` + email + `!"}`, `{"body":"Hello ada@example.com, bye ada@example.com!"}`},
		{"escaping", `{"text":"[` + quote + `]"}`, `{"text":"[say \"hi\"\\ now\n]"}`},
		{"number restored", `{"pan":"` + card + `","s":"pan ` + card + `"}`, `{"pan":4111111111111111,"s":"pan 4111111111111111"}`},
		{"in key", `{"` + email + `":true}`, `{"ada@example.com":true}`},
		{"nested", `[{"x":["` + email + `"]}]`, `[{"x":["ada@example.com"]}]`},
		{"escaped brackets", `{"to":"\u27e6` + strings.TrimSuffix(strings.TrimPrefix(email, "⟦"), "⟧") + `\u27e7"}`, `{"to":"ada@example.com"}`},
		{"lookalike left alone", `{"s":"⟦not a token⟧ ⟦email:xyz⟧"}`, `{"s":"⟦not a token⟧ ⟦email:xyz⟧"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Resolve(json.RawMessage(tc.args), "mail.send")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Resolve(%s) =\n%s\nwant\n%s", tc.args, got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("Resolve made invalid JSON %s", got)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{Rules: []Rule{{From: "crm.*", To: "http.*"}}})
	email := v.Tokenize(ClassEmail, "ada@example.com", []string{"crm.get_customer"})
	other := v.Tokenize(ClassEmail, "bob@example.com", []string{"hr.get_employee"})

	// A rule forbids crm values to http tools, wherever the token sits.
	_, err := v.Resolve(json.RawMessage(`{"url":"https://x.example/?q=`+email+`"}`), "http.get")
	var re *RuleError
	if !errors.As(err, &re) || !errors.Is(err, ErrExfiltration) {
		t.Fatalf("Resolve = %v, want a *RuleError", err)
	}
	if re.Token != email || re.Tool != "http.get" || re.Source != "crm.get_customer" || re.Rule.From != "crm.*" {
		t.Errorf("RuleError = %+v", re)
	}
	for _, part := range []string{email, "http.get", "crm.*", "http.*"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
	if strings.Contains(err.Error(), "ada@example.com") {
		t.Errorf("error %q reveals the value", err)
	}
	// The same value may go to other tools, and other values to http.
	if _, err := v.Resolve(json.RawMessage(`{"to":"`+email+`"}`), "mail.send"); err != nil {
		t.Errorf("crm value to mail.send: %v", err)
	}
	if _, err := v.Resolve(json.RawMessage(`{"q":"`+other+`"}`), "http.get"); err != nil {
		t.Errorf("hr value to http.get: %v", err)
	}

	// Unknown tokens and redaction markers are errors that name the token.
	unknown := "⟦email:00000000⟧"
	_, err = v.Resolve(json.RawMessage(`{"to":"`+unknown+`"}`), "mail.send")
	var te *TokenError
	if !errors.As(err, &te) || !errors.Is(err, ErrUnknownToken) || te.Token != unknown || !strings.Contains(err.Error(), unknown) {
		t.Errorf("unknown token: %v", err)
	}
	_, err = v.Resolve(json.RawMessage(`["`+RedactionMarker(ClassPassword)+`"]`), "db.login")
	if !errors.Is(err, ErrRedacted) {
		t.Errorf("redaction marker: %v, want ErrRedacted", err)
	}
	if _, err := v.Resolve(json.RawMessage(`{"a":"`+email+`"`), "x.y"); err == nil {
		t.Error("invalid JSON holding a token: no error")
	}
	if _, err := NewVault(fuzzKey, "local", VaultOptions{Rules: []Rule{{From: "[", To: "x"}}}); err == nil {
		t.Error("NewVault accepted a malformed glob")
	}
}

func TestResolveString(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{})
	tok := v.Tokenize(ClassPhone, "+1 415 555 2671", nil)
	got, err := v.ResolveString("call "+tok, "phone.call")
	if err != nil || got != "call +1 415 555 2671" {
		t.Errorf("ResolveString = %q, %v", got, err)
	}
}

func TestVaultBounded(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{MaxEntries: 10})
	var toks []string
	for i := range 25 {
		toks = append(toks, v.Tokenize(ClassEmail, fmt.Sprintf("user%d@example.com", i), nil))
	}
	if st := v.Stats(); st.Entries != 10 || st.Evicted != 15 || v.Len() != 10 {
		t.Fatalf("Stats = %+v, Len %d; want 10 entries, 15 evicted", st, v.Len())
	}
	// The oldest are gone, the newest resolve.
	if _, err := v.Resolve(json.RawMessage(`"`+toks[0]+`"`), "a.b"); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("evicted token: %v", err)
	}
	if _, err := v.Resolve(json.RawMessage(`"`+toks[24]+`"`), "a.b"); err != nil {
		t.Errorf("recent token: %v", err)
	}
	// The byte bound holds too, counting what Stats counts.
	one := newTestVault(t, VaultOptions{})
	one.Tokenize(ClassSecret, strings.Repeat("a", 30), nil)
	cost := one.Stats().Bytes
	if cost < 30+entryOverhead {
		t.Fatalf("one 30-byte value costs %d bytes", cost)
	}
	w := newTestVault(t, VaultOptions{MaxBytes: 3*cost + cost/2})
	for i := range 10 {
		w.Tokenize(ClassSecret, strings.Repeat(string(rune('a'+i)), 30), nil)
	}
	if st := w.Stats(); st.Entries != 3 || st.Bytes != 3*cost || st.Evicted != 7 {
		t.Errorf("Stats = %+v under a bound of 3.5 entries of %d bytes", st, cost)
	}
	// A value larger than the bound is not kept; its token stands.
	if tok := w.Tokenize(ClassSecret, strings.Repeat("z", 4*cost), nil); tok == "" || w.Stats().Entries != 3 {
		t.Errorf("oversized value: token %q, %+v", tok, w.Stats())
	}
}

func TestVaultStatsCount(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{})
	if st := v.Stats(); st != (VaultStats{}) {
		t.Fatalf("empty vault: %+v", st)
	}
	v.Tokenize(ClassEmail, "ada@example.com", nil)
	one := v.Stats().Bytes
	v.Tokenize(ClassEmail, "ada@example.com", nil) // again: nothing new
	if st := v.Stats(); st.Entries != 1 || st.Bytes != one {
		t.Errorf("same value twice: %+v, want %d bytes", st, one)
	}
	v.Tokenize(ClassEmail, "ada@example.com", []string{"crm.get", "crm.list"})
	if st := v.Stats(); st.Bytes <= one {
		t.Errorf("sources added, bytes %d ≤ %d", st.Bytes, one)
	}
	for i := range 100 {
		v.Tokenize(ClassEmail, fmt.Sprintf("u%03d@example.com", i), nil)
	}
	if st := v.Stats(); st.Entries != 101 || st.Bytes < 100*one {
		t.Errorf("101 values: %+v", st)
	}
}

func TestVaultCollisionLengthens(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{})
	a := v.Tokenize(ClassEmail, "a@example.com", nil)
	// Pretend another value already holds a's 8-digit token.
	v.mu.Lock()
	e := v.byToken[a]
	delete(v.byValue, valueKey{ClassEmail, "a@example.com"})
	e.value = "z@example.com"
	v.byValue[valueKey{ClassEmail, "z@example.com"}] = e
	v.mu.Unlock()
	b := v.Tokenize(ClassEmail, "a@example.com", nil)
	if b == a || !strings.HasPrefix(b, strings.TrimSuffix(a, "⟧")) || len(b) != len(a)+8 {
		t.Fatalf("after a collision, token %q for a value whose short token is %q", b, a)
	}
	got, err := v.Resolve(json.RawMessage(`["`+a+`","`+b+`"]`), "x.y")
	if err != nil || string(got) != `["z@example.com","a@example.com"]` {
		t.Errorf("Resolve = %s, %v", got, err)
	}
}

func TestVaultConcurrent(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{MaxEntries: 500, Rules: []Rule{{From: "crm.*", To: "http.*"}}})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				val := fmt.Sprintf("user%d@example.com", (g*7+i)%300)
				tok := v.Tokenize(ClassEmail, val, []string{"crm.list"})
				got, err := v.Resolve(json.RawMessage(`{"to":"`+tok+`"}`), "mail.send")
				if err != nil {
					if errors.Is(err, ErrUnknownToken) {
						continue // evicted by another goroutine meanwhile
					}
					t.Error(err)
					return
				}
				if string(got) != `{"to":"`+val+`"}` {
					t.Errorf("Resolve = %s, want %s", got, val)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestMaskValue(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"4111 1111 1111 1111":    "**** **** **** 1111",
		"DE89370400440532013000": "******************3000",
		"hunter22":               "********", // under 12 letters and digits: all masked
		"ada@example.com":        "***@******e.com",
		"日本":                     "**",
	}
	for in, want := range cases {
		if got := maskValue(in); got != want {
			t.Errorf("maskValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzResolve feeds arbitrary arguments to Resolve: it never panics, its
// output is valid JSON, arguments without tokens come back unchanged,
// after resolution no issued token is left, and another principal's vault
// never resolves them.
func FuzzResolve(f *testing.F) {
	v := newTestVault(f, VaultOptions{})
	toks := []string{
		v.Tokenize(ClassEmail, "ada@example.com", nil),
		v.Tokenize(ClassSecret, "q\"uo\\te\n\u2028", nil),
		v.tokenize(ClassCard, "4111111111111111", true, nil),
	}
	for _, s := range []string{`{"to":"` + toks[0] + `"}`, `["a ` + toks[1] + ` b",{"` + toks[0] + `":"` + toks[2] + `"}]`, `{"x":1}`, `"⟦email:00000000⟧"`} {
		f.Add([]byte(s))
	}
	other, err := NewVault(fuzzKey, "bob", VaultOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Another principal's vault never gives this one's values.
		if got, err := other.Resolve(data, "mail.send"); err == nil && !bytes.Contains(data, []byte("ada@example.com")) && bytes.Contains(got, []byte("ada@example.com")) {
			t.Fatalf("bob's vault resolved %q to %q", data, got)
		}
		out, err := v.Resolve(data, "mail.send")
		if err != nil {
			return
		}
		if !mayHoldToken(data) {
			if !bytes.Equal(out, data) {
				t.Fatalf("arguments without tokens changed: %q → %q", data, out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Resolve(%q) = %q, invalid JSON", data, out)
		}
		for _, tok := range toks {
			if bytes.Contains(out, []byte(tok)) {
				t.Fatalf("Resolve(%q) = %q still holds %s", data, out, tok)
			}
		}
	})
}

// pinnedAliceKeyID is the ID of alice's key under fuzzKey, computed
// outside Go: HMAC-SHA256(7×32 bytes, "codecell/filter token key
// v1\x00alice" ‖ 0x01), then the first 4 bytes of its SHA-256.
const pinnedAliceKeyID = "ea16ed4f"
