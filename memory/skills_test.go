package memory

import (
	"slices"
	"testing"
)

// TestSkillSubscribers: every subscriber hears a change, in the order
// they subscribed, until it cancels.
func TestSkillSubscribers(t *testing.T) {
	var subs SkillSubscribers
	var heard []string
	hear := func(name string) func(SkillChange) {
		return func(ch SkillChange) { heard = append(heard, name+":"+ch.Name) }
	}
	subs.Subscribe(hear("a"))
	cancelB := subs.Subscribe(hear("b"))
	subs.Subscribe(hear("c"))
	subs.Notify(SkillChange{Name: "x"})
	cancelB()
	cancelB() // twice is harmless
	subs.Notify(SkillChange{Name: "y"})
	if want := []string{"a:x", "b:x", "c:x", "a:y", "c:y"}; !slices.Equal(heard, want) {
		t.Fatalf("heard %v, want %v", heard, want)
	}
}
