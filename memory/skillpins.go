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

// SkillPinsOverLimit is the statement, in SQL both backends read with
// their placeholders for the principal {1}, the pin just made {2} and
// Limits.MaxSkillPins less one {3}, that deletes a principal's pins past
// the limit: besides the pin just made, it keeps the pins of skills
// published now by the pin's owner before the others, the newest first
// (issue 19, sec19: nothing deleted a pin, and one principal calling
// skills another published and unpublished in turn grew the table
// without bound).
const SkillPinsOverLimit = `DELETE FROM skill_pins WHERE principal = {1} AND name <> {2} AND name NOT IN (
	SELECT k.name FROM skill_pins k LEFT JOIN published_skills p ON p.name = k.name AND p.owner = k.owner
	WHERE k.principal = {1} AND k.name <> {2} ORDER BY p.name IS NULL, k.pinned_at DESC, k.name LIMIT {3})`
