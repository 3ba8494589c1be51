package memory

import "time"

// Skill pins: a principal that calls a skill another principal published
// runs the snapshot it called first, and not a later one unless it
// accepts it. The store keeps, per principal and skill name, which
// snapshot (owner, version, code hash) the principal pinned; the server
// compares it with the snapshot published now before it runs one.

// SkillPin is the published snapshot of a skill a principal runs.
type SkillPin struct {
	Name       string    `json:"name"`
	Owner      string    `json:"owner"`
	Version    int64     `json:"version"`
	CodeSHA256 string    `json:"code_sha256"`
	PinnedAt   time.Time `json:"pinned_at"`
}

// CheckSkillPin checks a pin to store as PinSkill does.
func CheckSkillPin(p SkillPin) error {
	if p.Name == "" || p.Owner == "" || p.CodeSHA256 == "" {
		return Invalid("pin skill: a pin needs the skill's name, owner and code hash")
	}
	return nil
}
