package lexicon

import "strings"

// This file is the vocabulary: how people's words map onto the words APIs
// use. It was written by hand from how REST and RPC API descriptions name
// their operations and resources (CRUD verbs and the verbs of
// sub-resource actions, resource nouns and their everyday names,
// abbreviations), each entry a general rule of API or English wording.

// Class is the CRUD sense of an operation or of a request, as a set.
type Class uint8

// The classes of what an operation does or a request asks.
const (
	Create Class = 1 << iota // bring something new into being, add it
	Get                      // read one thing
	List                     // read many things
	Update                   // change something that exists
	Delete                   // remove something
	Search                   // find things by a query
	Act                      // a named action on something (merge, send, archive)

	Read = Get | List | Search // the classes that change nothing
)

// verb is what a verb of a request means: its classes and the words an
// API may use for it.
type verb struct {
	class Class
	api   []string
}

// verbs maps the words people use for an action (plain, lower-case) to
// what they mean. A verb that names its own action (merge, refund, send)
// is Act and lists the API words for it; the others are CRUD.
var verbs = map[string]verb{}

func init() {
	add := func(class Class, surface string, api string) {
		for _, w := range strings.Fields(surface) {
			v := verbs[w]
			v.class |= class
			v.api = append(v.api, strings.Fields(api)...)
			verbs[w] = v
		}
	}
	add(Create, "create add new make open start setup register signup establish submit file compose write draft insert build generate spin enroll provision", "create add new insert")
	add(Get, "get fetch retrieve read show view see look check inspect display describe load pull open", "get retrieve read show view fetch info detail")
	add(List, "list enumerate browse all every", "list all")
	add(Search|List, "find search locate query filter discover", "search find query lookup filter list")
	add(Get|Search, "lookup", "get search find lookup")
	add(Update, "update change edit modify alter adjust set rename move mark toggle configure switch turn replace tweak correct fix", "update edit modify change set patch replace")
	add(Create, "set", "create add")
	add(Update, "rename", "name title")
	add(Delete, "delete remove destroy erase drop trash purge discard clear wipe unset", "delete remove destroy trash")
	add(Act|Delete, "cancel abort stop halt terminate end kill", "cancel stop end terminate abort")
	add(Act, "pause suspend freeze mute silence snooze", "pause suspend stop mute snooze")
	add(Act, "resume continue unpause play", "resume start play continue")
	add(Act|Create, "send email mail message dm text notify deliver forward post broadcast ping", "send post deliver notify message email")
	add(Create, "reply respond answer comment", "reply comment respond create")
	add(Act, "approve accept allow confirm endorse", "approve accept confirm allow")
	add(Act, "reject deny decline refuse dismiss", "reject deny decline dismiss")
	add(Act|Create, "refund reimburse", "refund")
	add(Act|Create, "pay charge bill", "pay charge payment")
	add(Create, "copy duplicate clone fork replicate", "copy duplicate clone fork")
	add(Create, "upload attach", "upload attach attachment add")
	add(Get, "download export", "download export content")
	add(Act|Create, "save like favorite favourite bookmark star heart", "save like favorite star bookmark follow")
	add(Delete, "unlike unfavorite unfavourite unbookmark unstar unfollow unsubscribe unwatch unpin unlink unassign untag unlabel unshare", "remove delete")
	add(Act|Create, "follow subscribe watch", "follow subscribe watch")
	add(Act|Create, "invite", "invite invitation add member")
	add(Act|Create, "join enter", "join add member")
	add(Act|Delete, "leave quit exit", "leave remove")
	add(Act|Delete, "kick expel ban evict", "kick remove ban")
	add(Act|Update, "assign allocate delegate", "assign assignee owner")
	add(Act|Update, "archive close shelve hide", "archive close closed")
	add(Act|Update, "restore recover undelete unarchive reopen revert undo", "restore recover unarchive reopen revert")
	add(Act, "merge squash land combine", "merge")
	add(Act, "lock unlock", "lock unlock")
	add(Act|Update, "enable activate", "enable activate")
	add(Act|Update, "disable deactivate", "disable deactivate suspend")
	add(Act|Get, "verify validate test", "verify validate test check")
	add(Create, "schedule book plan arrange", "schedule create book")
	add(Create, "remind", "reminder remind")
	add(Create, "react", "reaction react emoji")
	add(Act|Create, "pin", "pin")
	add(Create|Update, "tag label", "tag label add")
	add(Act|Create, "share grant give", "share grant add collaborator permission access")
	add(Act|Create, "transfer withdraw payout", "transfer payout")
	add(Get, "compare diff", "compare diff")
	add(Act|Create, "run execute trigger dispatch rerun launch kick", "run trigger dispatch execute start")
	add(Act, "deploy publish release ship", "deploy publish release create")
	add(Create, "vote upvote rate", "vote rate")
	add(Act, "skip", "skip next")
	add(Act, "shuffle repeat seek", "shuffle repeat seek")
	add(Act|Create, "queue enqueue", "queue add")
	add(Act|Update, "complete finish finalize resolve", "complete finalize finish close done")
	add(Act|Delete, "void invalidate revoke expire", "void revoke invalidate expire cancel")
	add(Get, "preview", "preview upcoming")
	add(Get, "count", "count total")
	add(Act, "capture authorize", "capture authorize")
	add(Act, "convert", "convert")
	add(Act|Update, "reorder sort rank", "reorder order move position")
	add(Act, "review", "review")
	add(Act|Create, "import sync", "import sync")
	add(Act, "refresh reload reset", "refresh reset")
	add(Act|Create, "ask request prompt", "request ask prompt approval")
	add(Create|Update, "store keep record put place", "create add set store save")
	add(Update|Create, "protect secure restrict", "protection protect restrict")
	add(Act|Create, "call phone ring dial", "call dial")
	add(Create, "report log", "create add")
	add(Act|Create, "link connect", "link connect add")
}

// lookupVerb returns what a verb of a request means: one of the
// vocabulary, or the undoing of one ("unsend", "unpublish"), which takes
// away what the verb gives, or turns its action around.
func lookupVerb(w string) (verb, bool) {
	if v, ok := verbs[w]; ok {
		return v, true
	}
	base, ok := strings.CutPrefix(w, "un")
	if !ok || len(base) < 3 {
		return verb{}, false
	}
	b, ok := verbs[base]
	if !ok || b.class&(Create|Act) == 0 || b.class&Delete != 0 {
		return verb{}, false
	}
	if b.class&Create != 0 {
		return verb{class: Delete, api: []string{"remove", "delete", w}}, true
	}
	return verb{class: Act, api: []string{w}}, true
}

// VerbClass returns the classes of a plain lower-case verb, and whether it
// is one.
func VerbClass(w string) (Class, bool) {
	v, ok := verbs[w]
	return v.class, ok
}

// phrases are words people write together for one thing; Analyze reads
// them as the words they stand for. Keys are words joined by spaces.
var phrases = map[string]string{
	"kick off": "start", "set up": "setup", "sign up": "register", "look at": "view", "look up": "lookup",
	"look for": "search", "look into": "view", "get rid of": "delete", "take off": "remove", "turn on": "enable",
	"turn off": "disable", "pay out": "payout", "on file": "saved", "logged in": "authenticated", "log in": "login",
	"sign in": "login", "spin up": "create", "clean up": "delete", "shut down": "stop", "find out": "get",
	"check out": "checkout", "e mail": "email", "to do": "task", "todo": "task", "money back": "refund",
	"thumbs up": "reaction", "do not disturb": "dnd", "back up": "backup", "hand over": "transfer", "hang up": "end",
	"fill in": "update", "mark as read": "read", "keep track": "track", "came in": "received", "went out": "sent",
	"api calls": "requests", "calls left": "remaining", "who am i": "authenticated user",
	"on my plate": "assigned to me", "on my list": "assigned to me",
	"leave a comment": "add comment", "leave a note": "add note", "leave a review": "add review",
	"leave a message": "send message", "leave feedback": "add feedback", "leave a reply": "add reply",
	"queue up": "queue", "right now": "currently", "at the moment": "currently", "these days": "currently",
}

// abbreviations are words written for several words an API spells out,
// or for a longer word; both the index and the query spell them out.
var abbreviations = map[string][]string{
	"pr": {"pull", "request"}, "prs": {"pull", "requests"}, "pulls": {"pull", "requests"},
	"repo": {"repository"}, "repos": {"repositories"},
	"org": {"organization"}, "orgs": {"organizations"},
	"dm": {"direct", "message"}, "dms": {"direct", "messages"},
	"msg": {"message"}, "msgs": {"messages"},
	"config": {"configuration"}, "configs": {"configurations"},
	"env": {"environment"}, "envs": {"environments"},
	"auth": {"authentication"}, "info": {"information"},
	"pic": {"picture"}, "pics": {"pictures"}, "img": {"image"}, "imgs": {"images"},
	"pwd": {"password"}, "addr": {"address"}, "qty": {"quantity"},
	"dir": {"directory"}, "dirs": {"directories"}, "attrs": {"attributes"}, "attr": {"attribute"},
	"prefs": {"preferences"}, "pref": {"preference"}, "admin": {"administrator"}, "admins": {"administrators"},
	"desc": {"description"}, "stats": {"statistics"}, "docs": {"documents"}, "doc": {"document"},
	"perm": {"permission"}, "perms": {"permissions"}, "txn": {"transaction"}, "txns": {"transactions"},
	"todo": {"task"}, "todos": {"tasks"}, "ci": {"workflow"}, "cd": {"deployment"},
	"avatar": {"picture"}, "photo": {"picture"}, "photos": {"pictures"},
	"colour": {"color"}, "favourite": {"favorite"}, "favourites": {"favorites"}, "cancelled": {"canceled"},
	"organisation": {"organization"}, "organisations": {"organizations"},
}

// synonymGroups are nouns and other words people and APIs use for the
// same thing; a query word also matches the others of its groups, at a
// lower weight.
var synonymGroups = [][]string{
	{"user", "member", "person", "people", "account", "profile", "someone", "somebody", "colleague", "teammate", "employee", "staff", "everyone"},
	{"team", "group", "squad", "department", "usergroup"},
	{"organization", "company", "enterprise", "workspace", "tenant"},
	{"channel", "conversation", "room", "chat"},
	{"message", "post", "chat", "text", "note"},
	{"comment", "reply", "remark", "note", "feedback", "story", "annotation"},
	{"issue", "bug", "ticket", "defect", "problem", "incident"},
	{"task", "ticket", "card", "item", "assignment", "chore"},
	{"section", "column", "list", "stage", "lane"},
	{"label", "tag", "category", "topic"},
	{"goal", "objective", "target", "okr"},
	{"milestone", "deadline", "due"},
	{"due", "deadline", "date"},
	{"branch", "ref", "reference", "head"},
	{"commit", "revision", "changeset", "sha"},
	{"release", "version", "tag"},
	{"workflow", "pipeline", "action", "build", "job", "check", "run"},
	{"log", "logs", "output", "trace"},
	{"secret", "credential", "key", "token", "password"},
	{"webhook", "hook", "callback", "endpoint", "listener"},
	{"notification", "alert", "inbox", "notice", "mention"},
	{"file", "document", "attachment", "upload", "content", "blob", "asset"},
	{"folder", "directory", "collection"},
	{"trash", "recycle", "bin", "deleted", "trashed"},
	{"version", "revision", "history"},
	{"link", "url", "permalink", "uri", "address"},
	{"picture", "image", "icon", "thumbnail", "logo", "cover"},
	{"setting", "preference", "option", "configuration"},
	{"status", "state", "presence", "availability"},
	{"presence", "online", "away", "active", "available", "offline"},
	{"event", "activity", "happen", "happened", "occurrence", "audit"},
	{"customer", "client", "buyer", "purchaser", "shopper", "subscriber", "payer"},
	{"payment", "charge", "transaction", "purchase", "paid"},
	{"invoice", "bill", "receipt", "statement"},
	{"refund", "reimbursement", "reversal"},
	{"dispute", "chargeback", "claim"},
	{"subscription", "plan", "membership", "recurring", "monthly"},
	{"coupon", "discount", "promo", "promotion", "voucher"},
	{"product", "item", "sku", "good", "offering", "catalog"},
	{"price", "pricing", "cost", "amount", "fee", "tariff"},
	{"payout", "withdrawal", "cashout"},
	{"balance", "funds", "money", "cash"},
	{"currency", "exchange", "conversion", "fx"},
	{"checkout", "purchase", "cart", "buy"},
	{"song", "track", "tune"},
	{"album", "record", "lp"},
	{"artist", "band", "singer", "musician", "performer"},
	{"playlist", "mix", "mixtape"},
	{"podcast", "show", "episode"},
	{"volume", "loudness", "sound"},
	{"playback", "player", "playing", "listening"},
	{"device", "speaker", "player"},
	{"meeting", "call", "conference", "appointment", "huddle"},
	{"recording", "video", "replay"},
	{"participant", "attendee", "registrant", "guest", "invitee"},
	{"email", "mail", "inbox"},
	{"signature", "sign", "esign"},
	{"calendar", "schedule", "agenda"},
	{"reminder", "alarm"},
	{"dnd", "snooze", "mute", "quiet"},
	{"reaction", "emoji", "emoticon", "smiley"},
	{"thread", "replies", "reply"},
	{"quota", "limit", "usage", "remaining", "left", "allowance"},
	{"request", "call"},
	{"follower", "fan", "watcher"},
	{"favorite", "starred", "bookmark", "saved", "liked", "library", "star"},
	{"copy", "duplicate", "clone", "fork", "replica"},
	{"collaborator", "contributor", "member"},
	{"permission", "access", "role", "privilege", "scope", "grant"},
	{"administrator", "owner", "manager"},
	{"snippet", "gist", "paste"},
	{"readme", "documentation", "introduction"},
	{"deployment", "release", "rollout"},
	{"environment", "stage", "staging", "production"},
	{"review", "approval", "feedback"},
	{"assignee", "owner", "responsible", "assigned"},
	{"dependency", "blocker", "blocked", "prerequisite", "depend", "wait"},
	{"subtask", "child", "step"},
	{"checklist", "checkitem"},
	{"template", "blueprint", "boilerplate", "preset"},
	{"report", "analytics", "metrics", "statistics", "dashboard", "usage"},
	{"history", "recent", "recently", "past", "previous", "played"},
	{"recent", "latest", "last", "newest"},
	{"top", "most", "best", "popular"},
	{"recommendation", "recommend", "suggest", "suggestion", "similar"},
	{"name", "title", "rename"},
	{"detail", "information", "metadata", "properties", "summary"},
	{"contents", "content", "body", "text", "data", "raw"},
	{"session", "login", "authentication", "authenticated"},
	{"valid", "test", "check", "verify"},
	{"invitation", "invite"},
	{"membership", "member", "participant"},
	{"open", "pending", "waiting", "active", "outstanding", "unresolved"},
	{"closed", "archived", "done", "complete", "completed", "resolved"},
	{"schedule", "scheduled", "later", "future", "timer"},
	{"tomorrow", "today", "tonight", "upcoming", "next"},
	{"day", "daily", "week", "weekly"},
	{"free", "available", "availability"},
	{"website", "site", "page"},
	{"table", "schema"},
	{"phone", "telephone", "mobile", "cell"},
	{"password", "passphrase"},
	{"location", "place", "address", "site"},
	{"space", "storage", "quota"},
	{"spam", "junk", "abuse"},
	{"contact", "address", "people"},
	{"room", "space", "venue"},
}

// SynonymWeight is the weight of a synonym's match beside the query's
// own word's; VerbWeight that of an API verb a request's verb stands for.
const (
	SynonymWeight = 0.4
	VerbWeight    = 0.35
)

// synonyms maps a stemmed word to the stemmed words it may stand for.
var synonyms = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		stems := make([]string, 0, len(g))
		for _, w := range g {
			for _, x := range Spell([]string{w}) {
				stems = append(stems, Stem(x))
			}
		}
		for _, a := range stems {
			for _, b := range stems {
				if a != b && !contains(m[a], b) {
					m[a] = append(m[a], b)
				}
			}
		}
	}
	return m
}()

// Synonyms returns the stemmed words a stemmed word may stand for.
func Synonyms(term string) []string { return synonyms[term] }

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// selfWords say that a request is about the one asking.
var selfWords = map[string]bool{"my": true, "me": true, "mine": true, "myself": true, "i": true, "own": true, "am": true}

// verbNouns are verbs whose action is the making of the thing they name
// ("comment on a task" adds a comment): a request that uses one asks for
// that thing.
var verbNouns = map[string]string{
	"comment": "comment", "reply": "reply", "tag": "tag", "label": "label", "pin": "pin", "star": "star",
	"message": "message", "email": "email", "vote": "vote", "review": "review", "schedule": "schedule",
	"remind": "reminder", "react": "reaction", "invite": "invitation", "bookmark": "bookmark", "file": "file",
	"upload": "file", "attach": "attachment", "note": "note", "text": "message", "dm": "message", "post": "post",
	"follow": "follower", "subscribe": "subscription", "assign": "assignee", "approve": "approval", "protect": "protection",
	"depend": "dependency", "queue": "queue", "watch": "watcher",
	"call": "call", "phone": "call", "ring": "call", "dial": "call", "pay": "payment", "refund": "refund", "charge": "charge", "transfer": "transfer", "payout": "payout",
}
