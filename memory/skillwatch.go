package memory

// Skill changes made by other connections.
//
// Each MCP host starts its own stdio server on the same database, so a
// skill saved in one process must reach the others. Every change is
// appended, in the transaction that makes it, to the table skill_changes
// with a sequence number and the id of the Store that made it; a watcher
// goroutine of each Store reads the entries after the last one it saw
// every Config.WatchInterval and delivers the others' changes to the
// OnSkillChange subscribers as the same SkillChange events.
//
// Why a change table rather than PRAGMA data_version: data_version only
// says that another connection committed something, and on a busy server
// audit records and memories are committed all the time; the store would
// then have to compare every skill to learn what changed. The table says
// which skill changed and how, lets a store skip its own changes (already
// delivered on the goroutine that made them), and shows a reader that fell
// behind what Prune removed, so it can ask for a reload. A poll is one
// read of an integer-keyed range, a few microseconds when nothing changed.

// SkillsReloaded is the Kind of a change that stands for changes the store
// missed (another process made more changes than the log keeps between
// two polls): Name is empty, Everyone is true, and a subscriber reloads
// every skill.
const SkillsReloaded SkillChangeKind = "reload"
