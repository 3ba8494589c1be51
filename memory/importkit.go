package memory

import (
	"context"
	"fmt"
)

// ImportSteps are what a backend does with each kind of record of an
// export, within the transaction it imports in; ApplyImport calls them in
// the records' order. Memory gets the index of its record.
type ImportSteps struct {
	Memory                 func(i int) (ImportOutcome, error)
	Entity, Relation, File func(rec Record) (ImportOutcome, error)
	Skill                  func(rec Record) (ImportOutcome, []SkillChange, error)
}

// ApplyImport imports recs with the backend's steps, counts in rep what
// was done, and returns the skill changes to announce once the
// transaction commits. Every backend imports through it, so that they
// count and refuse alike.
func ApplyImport(recs []Record, steps ImportSteps, rep *ImportReport) ([]SkillChange, error) {
	var changes []SkillChange
	for i, rec := range recs {
		var outcome ImportOutcome
		var err error
		switch rec.Kind {
		case "header":
			continue
		case "memory":
			outcome, err = steps.Memory(i)
		case "entity":
			outcome, err = steps.Entity(rec)
		case "relation":
			outcome, err = steps.Relation(rec)
		case "skill", "published_skill":
			var chs []SkillChange
			outcome, chs, err = steps.Skill(rec)
			changes = append(changes, chs...)
		case "file":
			outcome, err = steps.File(rec)
		default:
			err = fmt.Errorf("%w: unknown record kind %q", ErrInvalid, rec.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i+1, rec.Kind, err)
		}
		rep.Count(rec.Kind, outcome)
	}
	return changes, nil
}

// EmbedEach embeds the text of each item with e, 512 at a time, and hands
// each its vector.
func EmbedEach[T any](ctx context.Context, e Embedder, items []T, text func(T) string, set func(T, []float32)) error {
	for start := 0; start < len(items); start += 512 {
		batch := items[start:min(start+512, len(items))]
		texts := make([]string, len(batch))
		for i, it := range batch {
			texts[i] = text(it)
		}
		vs, err := Embed(ctx, e, texts)
		if err != nil {
			return err
		}
		for i, it := range batch {
			set(it, vs[i])
		}
	}
	return nil
}
