package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/codecell/codecell/memory"
)

// testSkillListing: a listing of the skills a principal can call is
// paged by name — own copies shadowing published ones, names ordered
// byte by byte whatever the database's collation — and ends a page at
// its bound of rows or of description bytes; it says who owns each and
// holds no code, which PublishedSkill reads for one snapshot.
func testSkillListing(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	alice, bob, carol := as(ctx, "alice"), as(ctx, "bob"), as(ctx, "carol")
	big := "return " + `"` + strings.Repeat("x", 50_000) + `"`
	// Bob publishes five; alice has two of her own, one of which shadows
	// bob's "a_b" for her.
	for _, name := range []string{"a_b", "ab", "a1", "b", "zz"} {
		if _, err := st.SaveSkill(bob, memory.Skill{Name: name, Description: "Bob's " + name + ".", Code: big}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.PublishSkill(bob, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a_b", "mine"} {
		if _, err := st.SaveSkill(alice, memory.Skill{Name: name, Description: "Alice's " + name + ".", Code: "return 1"}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(who string, q memory.SkillQuery) (names []string, next string) {
		t.Helper()
		page, err := st.ListCallableSkills(as(ctx, who), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, sk := range page.Skills {
			tag := sk.Name + "@" + sk.Owner
			if sk.Snapshot {
				tag += "/published"
				if sk.CodeSHA256 != memory.Hash([]byte(big)) || !sk.Published || sk.PublishedVersion != 1 {
					t.Errorf("%s's listing of %s: %+v", who, sk.Name, sk)
				}
			}
			names = append(names, tag)
		}
		return names, page.Next
	}
	// Byte order: "a1" < "a_b" < "ab" ('1' < '_' < 'b').
	all, next := list("alice", memory.SkillQuery{})
	if want := "a1@bob/published a_b@alice ab@bob/published b@bob/published mine@alice zz@bob/published"; strings.Join(all, " ") != want || next != "" {
		t.Fatalf("alice's listing: %q next %q, want %q", all, next, want)
	}
	// Pages of two, each starting after the last name of the one before.
	var paged []string
	after := ""
	for range 10 {
		names, next := list("alice", memory.SkillQuery{After: after, Limit: 2})
		if len(names) > 2 {
			t.Fatalf("a page of 2 held %q", names)
		}
		paged = append(paged, names...)
		if next == "" {
			break
		}
		after = next
	}
	if strings.Join(paged, " ") != strings.Join(all, " ") {
		t.Fatalf("paged by 2: %q, want %q", paged, all)
	}
	// The bytes of descriptions end a page once reached: one skill each.
	if names, next := list("carol", memory.SkillQuery{MaxBytes: 1}); len(names) != 1 || next != "a1" {
		t.Fatalf("a page of 1 byte: %q next %q", names, next)
	}
	if names, next := list("carol", memory.SkillQuery{After: "ab", MaxBytes: 1 << 20}); strings.Join(names, " ") != "b@bob/published zz@bob/published" || next != "" {
		t.Fatalf("carol's listing after ab: %q next %q", names, next)
	}
	// An own copy is marked published when its owner published it.
	page, err := st.ListCallableSkills(bob, memory.SkillQuery{Limit: 1})
	if err != nil || len(page.Skills) != 1 || page.Skills[0].Snapshot || !page.Skills[0].Published || page.Skills[0].Owner != "bob" || page.Next != "a1" {
		t.Fatalf("bob's first own skill: %+v %v", page, err)
	}
	// One snapshot, code and all, for whoever asks.
	sk, err := st.PublishedSkill(carol, "zz")
	if err != nil || sk.Code != big || sk.Owner != "bob" || !sk.Snapshot || sk.CodeSHA256 != memory.Hash([]byte(big)) {
		t.Fatalf("published zz: %v %v", sk.Name, err)
	}
	if _, err := st.PublishedSkill(alice, "mine"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("an unpublished skill: %v", err)
	}
}
