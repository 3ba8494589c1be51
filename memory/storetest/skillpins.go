package storetest

import (
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// testSkillPins: a principal's pin of a skill is its own, read on any
// instance, replaced by a later pin, and checked.
func testSkillPins(t *testing.T, open Opener) {
	a, b := instances(t, open)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	if _, err := a.SkillPin(alice, "fan"); err == nil {
		t.Fatal("a pin before any")
	} else {
		wantCode(t, err, memory.ErrNotFound)
	}
	first := memory.SkillPin{Name: "fan", Owner: "carol", Version: 1, CodeSHA256: "aaa"}
	if got, err := a.PinSkill(alice, first); err != nil || got.PinnedAt.IsZero() {
		t.Fatalf("pin: %+v, %v", got, err)
	}
	got, err := b.SkillPin(alice, "fan")
	if err != nil || got.Owner != "carol" || got.Version != 1 || got.CodeSHA256 != "aaa" || got.PinnedAt.IsZero() {
		t.Fatalf("pin on the other instance: %+v, %v", got, err)
	}
	if _, err := b.SkillPin(bob, "fan"); err == nil {
		t.Fatal("bob reads alice's pin")
	}
	if _, err := b.PinSkill(alice, memory.SkillPin{Name: "fan", Owner: "carol", Version: 2, CodeSHA256: "bbb"}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.SkillPin(alice, "fan"); err != nil || got.Version != 2 || got.CodeSHA256 != "bbb" {
		t.Fatalf("replaced pin: %+v, %v", got, err)
	}
	_, err = a.PinSkill(alice, memory.SkillPin{Name: "fan", Owner: "carol"})
	wantToolCode(t, err, tools.CodeInvalidArguments, memory.ErrInvalid)
}
