package storetest

import (
	"context"
	"errors"
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

// SkillPinsBound runs the contract that a principal keeps at most
// Limits.MaxSkillPins pins (issue 19, sec19: nothing deleted a pin, so
// one principal calling skills another published and unpublished in
// turn grew skill_pins without bound): past it the oldest go, first those
// of skills no longer published by the pin's owner, and never another
// principal's.
func SkillPinsBound(t *testing.T, open func(t *testing.T, lim memory.Limits) Backend) {
	st := open(t, memory.Limits{MaxSkillPins: 3})
	alice, bob, carol := as(t.Context(), "alice"), as(t.Context(), "bob"), as(t.Context(), "carol")
	// carol publishes "kept"; bob pins it and four skills since gone.
	if _, err := st.SaveSkill(carol, memory.Skill{Name: "kept", Description: "Kept.", Code: "return 1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PublishSkill(carol, "kept"); err != nil {
		t.Fatal(err)
	}
	pin := func(ctx context.Context, name string) {
		t.Helper()
		if _, err := st.PinSkill(ctx, memory.SkillPin{Name: name, Owner: "carol", Version: 1, CodeSHA256: "aaa"}); err != nil {
			t.Fatalf("pin %s: %v", name, err)
		}
	}
	pin(alice, "gone0")
	pin(bob, "kept")
	for _, name := range []string{"gone1", "gone2", "gone3", "gone4"} {
		pin(bob, name)
	}
	has := func(ctx context.Context, name string) bool {
		t.Helper()
		_, err := st.SkillPin(ctx, name)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	// Pins made in one millisecond are as old: which of gone1–gone3
	// stays is not said.
	var kept []string
	for _, name := range []string{"kept", "gone1", "gone2", "gone3", "gone4"} {
		if has(bob, name) {
			kept = append(kept, name)
		}
	}
	if len(kept) != 3 || kept[0] != "kept" || kept[2] != "gone4" {
		t.Fatalf("bob's pins past the bound of 3: %v, want kept, one of gone1–gone3 and gone4 (the last made)", kept)
	}
	if !has(alice, "gone0") {
		t.Fatal("bob's pins took alice's")
	}
}
