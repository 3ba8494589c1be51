package memory

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/codecell/codecell/tools"
)

// Skills belong to their owner, the principal that saved them: SaveSkill,
// GetSkill, ListSkills and DeleteSkill act on the caller's own skills, and
// no principal can change or delete another's. An owner may publish a
// skill (PublishSkill): the store keeps a snapshot of it — code fixed, with
// its SHA-256, its version, its owner and when it was published — that
// every principal can call, and that only the owner can replace (by
// publishing again) or withdraw (UnpublishSkill). Saving or deleting the
// owner's own copy leaves the snapshot as it was. A published name is
// unique across owners. For each principal, its own skill shadows a
// published one of the same name: ResolveSkill and CallableSkills apply
// that rule.

// Skill is a stored reusable program: an owner's own copy, or a published
// snapshot of one. The store keeps it; the server registers it as a tool
// and runs it in the sandbox, as its caller.
type Skill struct {
	// Owner is the principal that saved (and, for a snapshot, published)
	// the skill. SaveSkill ignores it: the owner is the caller.
	Owner       string          `json:"owner"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Code        string          `json:"code"`
	Language    string          `json:"language"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Version counts the saves of the owner's skill, from 1; a snapshot
	// keeps the version it was published at.
	Version int64 `json:"version"`
	// CodeSHA256 is the hex SHA-256 of Code.
	CodeSHA256 string `json:"code_sha256"`
	// Snapshot is true for a published snapshot, false for an owner's own
	// copy.
	Snapshot bool `json:"snapshot,omitempty"`
	// Published is true for a snapshot, and for an own copy whose owner
	// has published the name; PublishedVersion and PublishedAt then
	// describe the snapshot, which may be older than the own copy.
	Published        bool       `json:"published"`
	PublishedVersion int64      `json:"published_version,omitempty"`
	PublishedAt      *time.Time `json:"published_at,omitempty"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	// Provenance is the tool sources the data in the skill's code (and
	// description and schema) came from, as the server stated it when
	// the skill was saved (SaveSkill: the field, else the context's, see
	// WithProvenance; a save replaces it, as it replaces the code); a
	// snapshot keeps its own copy's. Absent when none was recorded.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// SkillInfo is what a listing of skills says of one: who owns it, its
// name, description and version, and whether it is published — never its
// code, which is read for the one skill run or shown (GetSkill,
// ResolveSkill, PublishedSkill), so that listing costs what the page
// holds, not every published skill's code.
type SkillInfo struct {
	Owner       string `json:"owner"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Language    string `json:"language"`
	Version     int64  `json:"version"`
	// CodeSHA256 is a snapshot's code hash; an own copy's is not kept
	// apart from its code, and is empty here.
	CodeSHA256       string     `json:"code_sha256,omitempty"`
	Snapshot         bool       `json:"snapshot,omitempty"`
	Published        bool       `json:"published"`
	PublishedVersion int64      `json:"published_version,omitempty"`
	PublishedAt      *time.Time `json:"published_at,omitempty"`
	UpdatedAt        time.Time  `json:"updated_at"`
	// Provenance is the skill's (see Skill.Provenance): its description
	// and name are data of those sources (issue 19, attack18 K6).
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// Pages of skill listings (SkillQuery.Limit).
const (
	DefaultSkillPage = 100
	MaxSkillPage     = 500
)

// SkillQuery asks for one page of a listing of skills, sorted by name.
type SkillQuery struct {
	// After lists the names after it (SkillPage.Next of the page
	// before); "" starts at the first.
	After string
	// Limit is the most skills a page holds: DefaultSkillPage when 0,
	// at most MaxSkillPage.
	Limit int
	// MaxBytes ends a page once the descriptions it holds reach this
	// many bytes (the skill that reached it included); 0 is no bound
	// but Limit.
	MaxBytes int
}

// PageLimit is q.Limit within its bounds.
func (q SkillQuery) PageLimit() int {
	switch {
	case q.Limit <= 0:
		return DefaultSkillPage
	case q.Limit > MaxSkillPage:
		return MaxSkillPage
	}
	return q.Limit
}

// SkillPage is one page of a listing of skills.
type SkillPage struct {
	Skills []SkillInfo `json:"skills"`
	// Next is the SkillQuery.After of the next page; "" when this page
	// is the last.
	Next string `json:"next,omitempty"`
}

// Full reports whether a page holding n skills whose descriptions hold
// bytes bytes is full under q: the next skill starts another page.
func (q SkillQuery) Full(n, bytes int) bool {
	return n >= q.PageLimit() || (q.MaxBytes > 0 && bytes >= q.MaxBytes)
}

// SkillChangeKind says what happened to a skill.
type SkillChangeKind string

// Kinds of skill change.
const (
	// SkillSaved: the owner saved its own copy.
	SkillSaved SkillChangeKind = "saved"
	// SkillDeleted: the owner deleted its own copy.
	SkillDeleted SkillChangeKind = "deleted"
	// SkillPublished: the owner published (or published again) the skill.
	SkillPublished SkillChangeKind = "published"
	// SkillUnpublished: the owner withdrew the published skill.
	SkillUnpublished SkillChangeKind = "unpublished"
)

// SkillChange tells subscribers that a skill changed. It is delivered
// after the change is committed. What a principal can call under the name
// may have changed; ResolveSkill, as that principal, says what it is now.
type SkillChange struct {
	// Principal owns the skill that changed.
	Principal string
	Name      string
	Kind      SkillChangeKind
	// Deleted is true when the owner's own copy (SkillDeleted) or the
	// published snapshot (SkillUnpublished) is gone.
	Deleted bool
	// Everyone is true when the change affects what every principal can
	// call (a publish or an unpublish); otherwise it affects the owner
	// only.
	Everyone bool
	// Version is the store-wide skills version after the change.
	Version int64
}

// skillNameRE: skill names become tool names (skills.<name>), so they are
// lower-case identifiers.
var skillNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// LegacySkillOwner owns the skills of the former shared scope after
// migration 4: the local user, as the stdio server names it.
const LegacySkillOwner = "local"

// LegacySkillScope is the principal under which skills were shared before
// they had owners.
const LegacySkillScope = "skills"

// ValidSkillName reports whether name can name a skill (it becomes a tool
// name).
func ValidSkillName(name string) bool { return skillNameRE.MatchString(name) }

// PrepareSkill checks a skill to save against lim and completes it as
// SaveSkill does: language defaulted, input schema compacted and compiled,
// owner and code hash set. It returns the schema as stored (nil for
// none).
func PrepareSkill(owner string, sk Skill, lim Limits) (Skill, error) {
	lim = lim.Defaults()
	if !skillNameRE.MatchString(sk.Name) {
		return Skill{}, Invalid("name %q: skill names are lower-case identifiers ([a-z][a-z0-9_]*, at most 64 characters), because they become tool names", Clip(sk.Name, 70))
	}
	if err := validateText("description", sk.Description, lim.MaxContentBytes, true); err != nil {
		return Skill{}, err
	}
	if strings.ContainsAny(strings.SplitN(sk.Description, "\n", 2)[0], "\r") {
		return Skill{}, Invalid("description: the first line may not contain carriage returns")
	}
	if err := validateText("code", sk.Code, lim.MaxSkillCodeBytes, true); err != nil {
		return Skill{}, err
	}
	switch sk.Language {
	case "":
		sk.Language = "javascript"
	case "javascript", "typescript":
	default:
		return Skill{}, Invalid("language %q: use javascript or typescript", Clip(sk.Language, 20))
	}
	if len(sk.InputSchema) > 0 && string(sk.InputSchema) != "null" {
		obj, err := normalizeObject("input_schema", sk.InputSchema, lim.MaxMetadataBytes)
		if err != nil {
			return Skill{}, err
		}
		if _, err := tools.CompileSchema(obj); err != nil {
			return Skill{}, Invalid("input_schema is not a valid JSON Schema: %v", err)
		}
		sk.InputSchema = obj
	} else {
		sk.InputSchema = nil
	}
	sk.Owner = owner
	sk.CodeSHA256 = Hash([]byte(sk.Code))
	sk.Snapshot = false
	return sk, nil
}

// SkillChangeOf completes a change with the fields its kind implies and
// the skills version it made.
func SkillChangeOf(principal, name string, kind SkillChangeKind, version int64) SkillChange {
	return SkillChange{Principal: principal, Name: name, Kind: kind, Version: version,
		Deleted:  kind == SkillDeleted || kind == SkillUnpublished,
		Everyone: kind == SkillPublished || kind == SkillUnpublished}
}

// SkillSubscribers are the functions a store calls after every change of
// a skill (OnSkillChange), in the order they subscribed. The zero value
// is ready to use; it is safe for concurrent use.
type SkillSubscribers struct {
	mu   sync.Mutex
	fns  map[int]func(SkillChange)
	next int
}

// Subscribe adds fn; cancel removes it.
func (s *SkillSubscribers) Subscribe(fn func(SkillChange)) (cancel func()) {
	s.mu.Lock()
	if s.fns == nil {
		s.fns = map[int]func(SkillChange){}
	}
	id := s.next
	s.next++
	s.fns[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.fns, id)
		s.mu.Unlock()
	}
}

// Notify calls every subscriber with ch, on the caller's goroutine.
func (s *SkillSubscribers) Notify(ch SkillChange) {
	s.mu.Lock()
	fns := make([]func(SkillChange), 0, len(s.fns))
	for i := 0; i < s.next; i++ {
		if fn, ok := s.fns[i]; ok {
			fns = append(fns, fn)
		}
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(ch)
	}
}
