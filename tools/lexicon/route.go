package lexicon

import (
	"strings"
)

// Operation is what an operation does, as its HTTP route and its name
// say.
type Operation struct {
	// Class is its CRUD sense: from the method and the shape of the path
	// (a POST on a collection creates, a GET on an item reads one, a GET on
	// a collection lists, PATCH and PUT update, DELETE removes), and from
	// the verbs of its name.
	Class Class
	// Verbs are the stems of the actions it names beyond CRUD: a
	// sub-resource action of its path (/archive, /verify, /refund) or a
	// verb of its name (merge, send).
	Verbs []string
	// Object is the stem of the resource it acts on: the last resource
	// its path names, else the last noun of its name.
	Object string
	// Context are the stems of the resources above the object in the path
	// and the other nouns of the name.
	Context []string
	// Attribute holds the stems of the field a PUT or PATCH on a
	// sub-path sets (Trello's PUT /cards/{id}/closed).
	Attribute []string
	// Self is set for an operation on the authenticated user's own things
	// (GitHub's /user/…, /me/…, "for_authenticated_user").
	Self bool
}

// methods are the HTTP methods a name may start with when it was made
// from the route (post_customers): they say nothing the route does not.
var methods = map[string]bool{"get": true, "post": true, "put": true, "patch": true, "delete": true, "head": true, "options": true}

// versionSegment reports whether a path segment is a version or a fixed
// prefix that names no resource (v1, 2.0, api, rest).
func versionSegment(s string) bool {
	if s == "api" || s == "rest" {
		return true
	}
	if len(s) >= 2 && (s[0] == 'v' || s[0] == 'V') && s[1] >= '0' && s[1] <= '9' {
		return true
	}
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// Describe says what an operation does from its short name and, for an
// HTTP operation, its route ("GET /repos/{owner}/{repo}/issues"); either
// may be empty.
func Describe(name, route string) Operation {
	var op Operation
	method, path, _ := strings.Cut(strings.TrimSpace(route), " ")
	method = strings.ToLower(method)
	path = trimFormats(path)
	nameWords := Spell(Words(name))
	rest := nameWords
	if len(rest) > 0 && methods[rest[0]] && method != "" {
		rest = rest[1:] // post_customers: the method, which the route says
	}
	rpc := strings.Contains(path, ".") && !strings.Contains(path, "{")
	pathWords := map[string]bool{}
	if path != "" && !rpc {
		op = describeRoute(method, path)
		for _, w := range Spell(Words(path)) {
			pathWords[w] = true
			pathWords[Stem(w)] = true
		}
	} else if method == "get" {
		op.Class = Get | List
	}
	// The verb of the name: the first word that is one among its first
	// two words (create_task, issues_create_comment, chat_post_message)
	// or its last (meeting_poll_create); the other words are nouns.
	var kept []string
	for _, w := range rest {
		if !IsStop(w) && w != "by" && w != "id" && !versionSegment(w) {
			kept = append(kept, w)
		}
	}
	verbAt := -1
	for i, w := range kept {
		// A word of the path is the resource's (post_refunds_refund_cancel:
		// the refund is what is cancelled).
		if v, ok := verbs[w]; ok && !IsPlural(w) && !pathWords[w] && !pathWords[Stem(w)] && (i < 2 || i == len(kept)-1) {
			verbAt = i
			op.Class |= v.class
			if v.class&Act != 0 {
				op.Verbs = appendNew(op.Verbs, Stem(w))
			}
			break
		}
	}
	if op.Class&Get != 0 && method == "get" && contains(rest, "all") {
		op.Class |= List // get_all_projects lists them, whatever the path's number
	}
	var nouns []string
	for i, w := range kept {
		if i != verbAt {
			nouns = append(nouns, Stem(w))
		}
	}
	if op.Object == "" && len(nouns) > 0 {
		op.Object = nouns[len(nouns)-1]
		nouns = nouns[:len(nouns)-1]
	}
	for _, n := range nouns {
		if n != op.Object && !contains(op.Verbs, n) {
			op.Context = appendNew(op.Context, n)
		}
	}
	for _, w := range nameWords {
		if w == "authenticated" || w == "me" || w == "my" || w == "self" || w == "mine" {
			op.Self = true
		}
	}
	if len(nameWords) >= 2 {
		for i := 1; i < len(nameWords); i++ {
			if nameWords[i-1] == "current" && (nameWords[i] == "user" || nameWords[i] == "users") {
				op.Self = true
			}
		}
	}
	return op
}

// describeRoute reads a REST path: its resources, and what the method
// does on the last of them.
func describeRoute(method, path string) Operation {
	var op Operation
	type seg struct {
		words []string
		param bool
	}
	var segs []seg
	for i, s := range strings.Split(strings.Trim(path, "/"), "/") {
		if s == "" {
			continue
		}
		if strings.HasPrefix(s, "{") || strings.HasPrefix(s, ":") {
			segs = append(segs, seg{param: true})
			continue
		}
		if i == 0 && versionSegment(s) || versionSegment(s) && len(segs) == 0 {
			continue
		}
		ws := Spell(Words(s))
		if len(ws) == 0 {
			continue
		}
		if s == "me" || s == "my" || s == "self" || s == "@me" || (len(segs) == 0 && s == "user") {
			op.Self = true
		}
		segs = append(segs, seg{words: ws})
	}
	if len(segs) == 0 {
		return op
	}
	// The last static segment, and whether a parameter follows it.
	last := -1
	for i := len(segs) - 1; i >= 0; i-- {
		if !segs[i].param {
			last = i
			break
		}
	}
	if last < 0 {
		return op
	}
	item := last < len(segs)-1
	lw := segs[last].words
	head := lw[len(lw)-1]
	afterItem := last > 0 && segs[last-1].param
	objectAt := last
	switch v, isVerb := verbs[lw[0]]; {
	case !item && isVerb && !IsPlural(head) && (afterItem || len(lw) > 1 || v.class&(Search|List) != 0 || method == "post" && last > 0):
		// A sub-resource action: /invoices/{id}/send, /customers/search,
		// /lists/{id}/moveAllCards.
		op.Class |= v.class
		if v.class&Act != 0 {
			op.Verbs = appendNew(op.Verbs, Stem(lw[0]))
		}
		if method == "get" && v.class&Read == 0 {
			op.Class |= Get
		}
		objectAt = last - 1
		// An action that names what it acts on (/addMembers, /moveAllCards)
		// acts on that, within the resource of the path.
		var named []string
		for _, w := range lw[1:] {
			if !IsStop(w) {
				named = append(named, Stem(w))
			}
		}
		if len(named) > 0 {
			op.Object = named[len(named)-1]
			op.Context = append(op.Context, named[:len(named)-1]...)
		}
	case !item && afterItem && !IsPlural(head) && (method == "put" || method == "patch"):
		// A field of an item set on its own path: PUT /cards/{id}/closed.
		op.Class |= Update
		for _, w := range lw {
			if !IsStop(w) && w != "id" {
				op.Attribute = append(op.Attribute, Stem(w))
			}
		}
		objectAt = last - 1
	default:
		plural := IsPlural(head)
		switch method {
		case "get", "head":
			switch {
			case item:
				op.Class |= Get
			case plural:
				op.Class |= List
			default:
				op.Class |= Get
			}
		case "post":
			switch {
			case item:
				op.Class |= Update
			case plural:
				op.Class |= Create
			default:
				op.Class |= Create | Update
			}
		case "put":
			if item {
				op.Class |= Update | Create
			} else {
				op.Class |= Update
			}
		case "patch":
			op.Class |= Update
		case "delete":
			op.Class |= Delete
		}
	}
	for i := objectAt; i >= 0; i-- {
		if segs[i].param {
			continue
		}
		ws := segs[i].words
		if op.Object == "" {
			op.Object = Stem(ws[len(ws)-1])
			for _, w := range ws[:len(ws)-1] {
				if !IsStop(w) {
					op.Context = appendNew(op.Context, Stem(w))
				}
			}
			continue
		}
		for _, w := range ws {
			if !IsStop(w) {
				op.Context = appendNew(op.Context, Stem(w))
			}
		}
	}
	return op
}

// formats are the file extensions some APIs end a path with to name the
// format of the answer (Twilio's /Accounts/{AccountSid}/Messages.json):
// they name no resource.
var formats = []string{".json", ".xml", ".csv", ".yaml", ".yml", ".txt", ".html"}

// trimFormats drops a format extension from each segment of path.
func trimFormats(path string) string {
	if !strings.Contains(path, ".") {
		return path
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		for _, f := range formats {
			if len(s) > len(f) && strings.EqualFold(s[len(s)-len(f):], f) {
				segs[i] = s[:len(s)-len(f)]
				break
			}
		}
	}
	return strings.Join(segs, "/")
}

func appendNew(ss []string, s string) []string {
	if contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

// LeadVerbs reads what an operation does from the verbs its summary (or
// the first sentence of its description) starts with: "Creates a
// customer", "Add or update a contact", "Send a message". It returns
// their classes and the stems of those that name an action beyond CRUD;
// 0 and nil when the text does not start with a verb of the vocabulary.
func LeadVerbs(text string) (Class, []string) {
	if IsRoute(text) {
		return 0, nil // the route for a summary: "POST /2010-04-01/…"
	}
	ws := Words(text)
	var class Class
	var acts []string
	for i := 0; i < len(ws) && i < 3; i++ {
		if i == 1 {
			if ws[i] != "and" && ws[i] != "or" {
				break
			}
			continue
		}
		v, w, ok := baseVerb(ws[i])
		if !ok {
			break
		}
		class |= v.class
		if v.class&Act != 0 {
			acts = appendNew(acts, Stem(w))
		}
	}
	return class, acts
}

// IsRoute reports whether text is an HTTP route ("POST /v1/customers"),
// as generated descriptions give for a summary.
func IsRoute(text string) bool {
	m, rest, ok := strings.Cut(strings.TrimSpace(text), " ")
	return ok && methods[strings.ToLower(m)] && strings.HasPrefix(rest, "/") && !strings.Contains(rest, " ")
}

// baseVerb finds a word of a summary among the vocabulary's verbs,
// written as a command (create) or as what the operation does (creates,
// searches, copies).
func baseVerb(w string) (verb, string, bool) {
	for _, c := range []string{w, strings.TrimSuffix(w, "s"), strings.TrimSuffix(w, "es"), strings.TrimSuffix(w, "ies") + "y"} {
		if c == "" || c == w && strings.HasSuffix(w, "s") && len(w) > 3 {
			continue // "lists" is a plural before it is a verb
		}
		if v, ok := verbs[c]; ok {
			return v, c, true
		}
	}
	return verb{}, "", false
}
