package sqlite

import (
	"github.com/codecell/codecell/memory"

	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	sqlite_vec "github.com/asg017/sqlite-vec-go-bindings/cgo"

	"github.com/codecell/codecell/tools"
)

func TestSkills(t *testing.T) {
	s := openTest(t, Config{})
	ctx := as(t.Context(), "alice")
	var changes []memory.SkillChange
	cancel := s.OnSkillChange(func(c memory.SkillChange) { changes = append(changes, c) })
	defer cancel()
	v0, _ := s.SkillsVersion(ctx)
	sk, err := s.SaveSkill(ctx, memory.Skill{Name: "summarize_issues", Description: "Summarize open issues by label.",
		Code: "export default async (args) => args.label", InputSchema: []byte(`{"type":"object","properties":{"label":{"type":"string"}}}`)})
	if err != nil || sk.Version != 1 || sk.Language != "javascript" || sk.Owner != "alice" || sk.CodeSHA256 != memory.Hash([]byte(sk.Code)) || sk.Published {
		t.Fatalf("save: %+v %v", sk, err)
	}
	sk2, err := s.SaveSkill(ctx, memory.Skill{Name: "summarize_issues", Description: "v2", Code: "return 2", Language: "typescript"})
	if err != nil || sk2.Version != 2 || !sk2.CreatedAt.Equal(sk.CreatedAt) || sk2.InputSchema != nil {
		t.Fatalf("save again: %+v %v", sk2, err)
	}
	got, err := s.GetSkill(ctx, "summarize_issues")
	if err != nil || got.Code != "return 2" || got.Language != "typescript" || got.Version != 2 {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := s.SaveSkill(as(t.Context(), "bob"), memory.Skill{Name: "b", Description: "d", Code: "c"}); err != nil {
		t.Fatal(err)
	}
	mine, _ := s.ListSkills(ctx)
	all, _ := s.AllSkills(ctx)
	if len(mine) != 1 || len(all) != 2 || all[0].Owner != "alice" {
		t.Fatalf("list: mine %d, all %+v", len(mine), all)
	}
	_, err = s.GetSkill(as(t.Context(), "bob"), "summarize_issues")
	wantCode(t, err, tools.CodeNotFound)
	if err := s.DeleteSkill(ctx, "summarize_issues"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.DeleteSkill(ctx, "summarize_issues"), tools.CodeNotFound)
	v1, _ := s.SkillsVersion(ctx)
	if v1 != v0+4 || len(changes) != 4 || !changes[3].Deleted || changes[3].Version != v1 || changes[3].Kind != memory.SkillDeleted {
		t.Fatalf("versions %d -> %d, changes %+v", v0, v1, changes)
	}
	if changes[2].Principal != "bob" || changes[2].Everyone {
		t.Fatalf("bob's save: %+v", changes[2])
	}
	for _, bad := range []memory.Skill{
		{Name: "Bad-Name", Description: "d", Code: "c"},
		{Name: "ok", Description: "", Code: "c"},
		{Name: "ok", Description: "d", Code: ""},
		{Name: "ok", Description: "d", Code: "c", Language: "python"},
		{Name: "ok", Description: "d", Code: "c", InputSchema: []byte(`{"type": 5}`)},
		{Name: "ok", Description: "d", Code: "c", InputSchema: []byte(`[1]`)},
	} {
		_, err := s.SaveSkill(ctx, bad)
		wantCode(t, err, tools.CodeInvalidArguments)
	}
}

// TestSkillOwnership is the attack of issue 10 (critical 3): principal A
// replaces or deletes B's skill. Each principal's skills are its own; a
// published skill can be changed and withdrawn by its owner only.
func TestSkillOwnership(t *testing.T) {
	s := openTest(t, Config{})
	alice, bob, carol := as(t.Context(), "alice"), as(t.Context(), "bob"), as(t.Context(), "carol")
	var changes []memory.SkillChange
	defer s.OnSkillChange(func(c memory.SkillChange) { changes = append(changes, c) })()

	if _, err := s.SaveSkill(bob, memory.Skill{Name: "report", Description: "Bob's report.", Code: "return 'bob v1'"}); err != nil {
		t.Fatal(err)
	}
	// Alice saving the same name makes her own skill: Bob's is untouched.
	if _, err := s.SaveSkill(alice, memory.Skill{Name: "report", Description: "Trojan.", Code: "return memory.recall('x')"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSkill(bob, "report"); got.Code != "return 'bob v1'" || got.Owner != "bob" {
		t.Fatalf("bob's skill after alice saved hers: %+v", got)
	}
	if err := s.DeleteSkill(alice, "report"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.DeleteSkill(alice, "report"), tools.CodeNotFound)
	if _, err := s.GetSkill(bob, "report"); err != nil {
		t.Fatalf("alice's delete reached bob's skill: %v", err)
	}
	// Nobody but Bob sees it until he publishes it.
	_, err := s.ResolveSkill(carol, "report")
	wantCode(t, err, tools.CodeNotFound)
	_, err = s.PublishSkill(alice, "report")
	wantCode(t, err, tools.CodeNotFound)

	pub, err := s.PublishSkill(bob, "report")
	if err != nil || !pub.Snapshot || !pub.Published || pub.Owner != "bob" || pub.Version != 1 || pub.PublishedAt == nil || pub.CodeSHA256 != memory.Hash([]byte("return 'bob v1'")) {
		t.Fatalf("publish: %+v %v", pub, err)
	}
	last := changes[len(changes)-1]
	if last.Kind != memory.SkillPublished || !last.Everyone || last.Principal != "bob" || last.Name != "report" {
		t.Fatalf("publish change: %+v", last)
	}
	got, err := s.ResolveSkill(carol, "report")
	if err != nil || got.Code != "return 'bob v1'" || got.Owner != "bob" || !got.Snapshot {
		t.Fatalf("carol resolves: %+v %v", got, err)
	}
	// The published code is fixed: Bob's later saves do not change it.
	if _, err := s.SaveSkill(bob, memory.Skill{Name: "report", Description: "Bob's report.", Code: "return 'bob v2'"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ResolveSkill(carol, "report"); got.Code != "return 'bob v1'" || got.Version != 1 {
		t.Fatalf("snapshot changed with the owner's copy: %+v", got)
	}
	if own, _ := s.GetSkill(bob, "report"); !own.Published || own.PublishedVersion != 1 || own.Version != 2 {
		t.Fatalf("bob's copy: %+v", own)
	}
	// Nobody else can replace or withdraw it.
	if _, err := s.SaveSkill(alice, memory.Skill{Name: "report", Description: "Trojan.", Code: "return 'evil'"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.PublishSkill(alice, "report")
	if te := wantCode(t, err, memory.CodeConflict); !errors.Is(te, memory.ErrConflict) {
		t.Fatalf("conflict does not wrap ErrConflict: %v", te)
	}
	wantCode(t, s.UnpublishSkill(alice, "report"), memory.CodeConflict)
	wantCode(t, s.UnpublishSkill(alice, "nothing"), tools.CodeNotFound)
	if got, _ := s.ResolveSkill(carol, "report"); got.Code != "return 'bob v1'" {
		t.Fatalf("alice changed the published skill: %+v", got)
	}
	// Alice's own skill shadows the published one, for her only.
	if got, _ := s.ResolveSkill(alice, "report"); got.Code != "return 'evil'" || got.Owner != "alice" || got.Snapshot {
		t.Fatalf("alice resolves: %+v", got)
	}
	// Publishing again replaces the snapshot.
	if pub, err := s.PublishSkill(bob, "report"); err != nil || pub.Code != "return 'bob v2'" || pub.Version != 2 {
		t.Fatalf("publish again: %+v %v", pub, err)
	}
	if got, _ := s.ResolveSkill(carol, "report"); got.Code != "return 'bob v2'" {
		t.Fatalf("after publishing again: %+v", got)
	}

	// What each principal can call.
	if _, err := s.SaveSkill(carol, memory.Skill{Name: "mine", Description: "Carol's.", Code: "return 1"}); err != nil {
		t.Fatal(err)
	}
	callable := func(ctx any) []string {
		t.Helper()
		var out []string
		page, err := s.ListCallableSkills(as(t.Context(), ctx.(string)), memory.SkillQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for _, sk := range page.Skills {
			out = append(out, sk.Name+"@"+sk.Owner+map[bool]string{true: "/published", false: ""}[sk.Snapshot])
		}
		return out
	}
	for who, want := range map[string][]string{
		"carol": {"mine@carol", "report@bob/published"},
		"alice": {"report@alice"},
		"bob":   {"report@bob"},
		"dave":  {"report@bob/published"},
	} {
		if got := callable(who); !slices.Equal(got, want) {
			t.Errorf("%s can call %q, want %q", who, got, want)
		}
	}
	if pubs, _ := s.PublishedSkills(t.Context()); len(pubs) != 1 || pubs[0].Name != "report" {
		t.Fatalf("published: %+v", pubs)
	}

	// Deleting the own copy keeps the snapshot; unpublishing withdraws it.
	if err := s.DeleteSkill(bob, "report"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ResolveSkill(bob, "report"); err != nil || !got.Snapshot {
		t.Fatalf("bob after deleting his copy: %+v %v", got, err)
	}
	if err := s.UnpublishSkill(bob, "report"); err != nil {
		t.Fatal(err)
	}
	last = changes[len(changes)-1]
	if last.Kind != memory.SkillUnpublished || !last.Everyone || !last.Deleted {
		t.Fatalf("unpublish change: %+v", last)
	}
	_, err = s.ResolveSkill(carol, "report")
	wantCode(t, err, tools.CodeNotFound)
	// Now the name is free for another owner to publish.
	if _, err := s.PublishSkill(alice, "report"); err != nil {
		t.Fatalf("publish a freed name: %v", err)
	}
}

// TestMigrateSharedSkills opens a database of schema 3, where skills were
// shared under the principal "skills", and checks that they become the
// local user's, published, so every principal still calls them.
func TestMigrateSharedSkills(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "v3.db")
	old, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	vecOnce.Do(sqlite_vec.Auto)
	if err := migrateTo(ctx, old, 3, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ principal, name, code string }{
		{"skills", "shared_one", "return 1"},
		{"skills", "clash", "return 'shared'"},
		{"local", "clash", "return 'local'"},
		{"bob", "private", "return 'bob'"},
	} {
		if _, err := old.Exec(`INSERT INTO skills (principal, name, description, code, language, version, created_at, updated_at)
			VALUES (?, ?, 'd', ?, 'javascript', 3, 1000, 2000)`, r.principal, r.name, r.code); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	s := openTestAt(t, path)
	for _, c := range []struct{ who, name, code, owner string }{
		{"carol", "shared_one", "return 1", "local"},
		{"carol", "clash", "return 'shared'", "local"},
		{"local", "clash", "return 'local'", "local"},
		{"local", "shared_one", "return 1", "local"},
		{"bob", "private", "return 'bob'", "bob"},
	} {
		got, err := s.ResolveSkill(as(ctx, c.who), c.name)
		if err != nil || got.Code != c.code || got.Owner != c.owner || got.Version != 3 {
			t.Errorf("%s resolves %s: %+v %v", c.who, c.name, got, err)
		}
	}
	if _, err := s.ResolveSkill(as(ctx, "carol"), "private"); err == nil {
		t.Error("bob's private skill became callable")
	}
	if own, _ := s.ListSkills(as(ctx, memory.LegacySkillScope)); len(own) != 0 {
		t.Errorf("the shared scope still holds skills: %+v", own)
	}
	// The local user owns the published ones: it can withdraw them.
	if err := s.UnpublishSkill(as(ctx, "local"), "shared_one"); err != nil {
		t.Fatal(err)
	}
}
