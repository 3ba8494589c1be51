package search

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/codecell/codecell/tools"
)

// noDocs is a Docs that renders nothing.
type noDocs struct{}

func (noDocs) Signature(string) (string, []byte, bool) { return "", nil, false }
func (noDocs) Full(string) (string, []byte, bool)      { return "", nil, false }
func (noDocs) Output(string) (string, bool)            { return "", false }

// TestTermsKeptBetweenStarts: the terms of each tool are kept in a file
// per category under the registry's snapshot directory and read by the
// next start of the same build; a tool that changed is analysed again,
// and a file of another build, or damaged, is not used.
func TestTermsKeptBetweenStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noop := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	getUser := tools.Tool{Name: "crm.get_user", Summary: "Get a user by id.", Handler: noop,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}
	others := []tools.Tool{
		{Name: "crm.delete_user", Summary: "Delete a user.", Handler: noop},
		{Name: "mail.send", Summary: "Send an e-mail.", Handler: noop},
	}
	start := func(version string, get tools.Tool) *Index {
		reg := tools.NewRegistry()
		reg.SetSnapshots(dir, func() string { return version })
		if err := reg.Register(append([]tools.Tool{get}, others...)...); err != nil {
			t.Fatal(err)
		}
		return New(reg, func(tools.Caller) Docs { return noDocs{} })
	}
	first := func(ix *Index, q string) string {
		t.Helper()
		hits, err := ix.Search(Query{Text: q, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			return ""
		}
		return hits[0].Name
	}
	if got := first(start("v1", getUser), "fetch a user"); got != "crm.get_user" {
		t.Fatalf("first hit %q, want crm.get_user", got)
	}
	path := filepath.Join(dir, "crm.terms")
	terms, err := readTerms(path, "v1")
	if err != nil || len(terms) != 2 {
		t.Fatalf("crm.terms: %d tools' terms, %v; want 2", len(terms), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mail.terms")); err != nil {
		t.Fatal(err)
	}
	// The file says get_user's name holds "zebra": a start that reads
	// the file finds it by that word, one that does not cannot.
	var tc termCache
	key := tc.hash(&getUser)
	terms[key].Fields[fieldName] = append(terms[key].Fields[fieldName], "zebra")
	writeTerms(dir, "v1", "crm", terms)
	if got := first(start("v1", getUser), "zebra"); got != "crm.get_user" {
		t.Errorf("a restart did not read the terms: %q for zebra", got)
	}
	changed := getUser
	changed.Summary = "Get one user by id."
	if got := first(start("v1", changed), "zebra"); got != "" {
		t.Errorf("a changed tool's kept terms were used: %q for zebra", got)
	}
	if got := first(start("v2", getUser), "zebra"); got != "" {
		t.Errorf("another build's terms were used: %q for zebra", got)
	}
	if _, err := readTerms(path, "v2"); err != nil {
		t.Errorf("the v2 start did not keep its terms: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := first(start("v2", getUser), "fetch a user"); got != "crm.get_user" {
		t.Errorf("with a damaged file, first hit %q, want crm.get_user", got)
	}
}

// TestTermsReadWhenTheViewChanges: a source registered after the index
// was made adds its own tools' terms, kept in its own file, and leaves
// the others' as they were — neither analysed nor read again (attack15
// L1: every change made every view's index anew) — while a new index, a
// restart's, reads them all from their files.
func TestTermsReadWhenTheViewChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noop := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	getUser := tools.Tool{Name: "crm.get_user", Summary: "Get a user by id.", Handler: noop}
	reg := tools.NewRegistry()
	reg.SetSnapshots(dir, func() string { return "v1" })
	if err := reg.Register(getUser); err != nil {
		t.Fatal(err)
	}
	ix := New(reg, func(tools.Caller) Docs { return noDocs{} })
	if _, err := ix.Search(Query{Text: "user"}); err != nil {
		t.Fatal(err)
	}
	terms, err := readTerms(filepath.Join(dir, "crm.terms"), "v1")
	if err != nil {
		t.Fatal(err)
	}
	var tc termCache
	registered, _ := reg.Get("crm.get_user")
	key := tc.hash(registered)
	if terms[key] == nil {
		t.Fatalf("crm.terms holds no terms under crm.get_user's hash")
	}
	terms[key].Fields[fieldName] = append(terms[key].Fields[fieldName], "zebra")
	writeTerms(dir, "v1", "crm", terms)
	if err := reg.Register(tools.Tool{Name: "mail.send", Summary: "Send an e-mail.", Handler: noop}); err != nil {
		t.Fatal(err)
	}
	if hits, err := ix.Search(Query{Text: "e-mail"}); err != nil || len(hits) == 0 || hits[0].Name != "mail.send" {
		t.Errorf("mail.send: %v %v", hits, err)
	}
	if hits, err := ix.Search(Query{Text: "zebra"}); err != nil || len(hits) != 0 {
		t.Errorf("crm's terms were read again for a change of mail's: %v %v", hits, err)
	}
	if _, err := readTerms(filepath.Join(dir, "mail.terms"), "v1"); err != nil {
		t.Errorf("mail's terms were not kept: %v", err)
	}
	restarted := New(reg, func(tools.Caller) Docs { return noDocs{} })
	hits, err := restarted.Search(Query{Text: "zebra"})
	if err != nil || len(hits) != 1 || hits[0].Name != "crm.get_user" {
		t.Errorf("a new index did not read crm's kept terms: %v %v", hits, err)
	}
}
