package lexicon

import (
	"slices"
	"strings"
)

// Query is what a request says, as ranking needs it.
type Query struct {
	// Terms are the index terms of its own words (Terms), its phrases
	// read as the words they stand for.
	Terms []string
	// Related are other terms it may be worded as, with the weight of
	// their match (below 1): synonyms, and the API verbs its verb stands
	// for.
	Related map[string]float64
	// Class is what it asks to do, 0 when it does not say.
	Class Class
	// Verbs are the stems of the action verbs it uses beyond CRUD.
	Verbs []string
	// Verb is the stem of the word that says what it asks to do, "" when
	// none does: a word to rank by its sense (Class) more than by its
	// letters.
	Verb string
	// Question is set for a request for information ("which …", "who …",
	// "is …?", "how many …").
	Question bool
	// Self is set when it is about the one asking ("my repos", "who am
	// I").
	Self bool
	// Plural is set when it names things in the plural ("list issues").
	Plural bool
	// VerbIsNoun is set when its verb is also what it asks for ("pin a
	// message", "comment on a task"); VerbNoun is then the stem of that
	// noun (pin, comment): what an API may call the thing it makes.
	VerbIsNoun bool
	VerbNoun   string
	// Head is the stem of the thing it asks about: its first noun
	// ("songs" of "songs on an album"), or what its verb makes ("comment
	// on a task" asks for a comment); "" when it names none.
	Head string
	// Compound are the stems of the words before Head in the noun
	// compound it ends ("code" of "code snippet", "bug" of "bug
	// report"): what is asked about may be named by any of them.
	Compound []string
	// General are the stems of words related to its words in general
	// English (General: "quarter" → period, "danceable" → dance), with
	// their weight (0 to 1), beside Terms and Related.
	General map[string]float64
	// verbWords are the stems of the API words of its verb.
	verbWords map[string]bool
}

// IsHead reports whether a stemmed term names what the query asks
// about: its head noun, a noun of the compound it heads, or a synonym of
// either.
func (q Query) IsHead(t string) bool {
	if q.Head == "" {
		return false
	}
	if t == q.Head || contains(synonyms[q.Head], t) {
		return true
	}
	for _, c := range q.Compound {
		if t == c || contains(synonyms[c], t) {
			return true
		}
	}
	return false
}

// IsVerbWord reports whether a stemmed term is one of the API words for
// what the query's verb asks (create, add and insert for "add").
func (q Query) IsVerbWord(t string) bool {
	return q.Verb != "" && q.verbWords[t]
}

// Limits of Query.General.
const (
	generalPerWord   = 4
	generalMinWeight = 0.5
)

// Analyze reads a request.
func Analyze(text string) Query {
	raw, framed := Request(Words(text))
	ws := rewrite(raw)
	var q Query
	q.Related = map[string]float64{}
	own := map[string]bool{}
	for i, w := range raw {
		if !selfWords[w] {
			continue
		}
		// "Remind me", "send me", "show me": me is who the action is
		// for, not whose things it is about.
		if _, afterVerb := verbs[wordBefore(raw, i)]; w == "me" && (afterVerb || lightVerbs[wordBefore(raw, i)] || tellVerbs[wordBefore(raw, i)]) {
			continue
		}
		q.Self = true
	}
	if len(raw) > 0 {
		switch ws := raw; ws[0] {
		case "which", "what", "who", "whom", "whose", "where", "when":
			q.Question = true
		case "is", "are", "does", "did", "do", "has", "have", "can", "was", "were":
			q.Question = len(ws) > 1
		case "how":
			q.Question = len(ws) > 1 && (ws[1] == "many" || ws[1] == "much")
		}
		if strings.HasSuffix(strings.TrimSpace(text), "?") && !framed {
			q.Question = true
		}
	}
	spelled := Spell(ws)
	for _, w := range spelled {
		if IsStop(w) {
			continue
		}
		t := Stem(w)
		q.Terms = append(q.Terms, t)
		own[t] = true
		if IsPlural(w) {
			q.Plural = true
		}
	}
	// The verb: the first word that is one, among the first few.
	if !q.Question {
		for i, w := range ws {
			if i > 3 {
				break
			}
			v, ok := lookupVerb(w)
			if !ok || IsPlural(w) || i > 0 && initialVerbs[w] {
				continue
			}
			// "Start watching a ticket", "stop following a user": the
			// verb after it says what to start or stop.
			if g, gv, ok := gerundAfter(ws, i); ok && aspectVerbs[w] != 0 {
				if aspectVerbs[w] > 0 {
					w, v = g, gv
				} else if uv, ok := lookupVerb("un" + g); ok && uv.class&Delete != 0 {
					w, v = "un"+g, uv
				}
			}
			if adjectives[w] && IsPlural(wordAfter(ws, w)) {
				continue // "open bugs" are bugs that are open
			}
			// "Make a copy", "give a refund", "take a look": the noun says
			// what to do.
			if lightVerbs[w] {
				if n := wordAfter(ws, w); n != "" && !IsPlural(n) {
					if nv, ok := verbs[n]; ok {
						w, v = n, nv
					}
				}
			}
			q.Class = v.class
			q.Verb = Stem(w)
			if v.class&Act != 0 {
				q.Verbs = append(q.Verbs, Stem(w))
			}
			q.verbWords = map[string]bool{}
			for _, a := range v.api {
				t := Stem(a)
				q.verbWords[t] = true
				if !own[t] {
					q.Related[t] = max(q.Related[t], VerbWeight)
				}
			}
			if (v.class == Get || v.class == Get|List) && q.Plural {
				q.Class = List
			}
			break
		}
	} else {
		switch {
		case q.Plural || raw[0] == "who" || raw[0] == "whom" || len(raw) > 1 && raw[1] == "many":
			q.Class = List | Get | Search
		default:
			q.Class = Get | List
		}
	}
	// "Find a customer by email", "songs matching a word": to look
	// things up by what they hold is a search, not a listing.
	if q.Class&Search != 0 && q.Class&(Create|Update|Delete) == 0 {
		for i, w := range raw {
			if (w == "by" || w == "matching" || w == "containing" || w == "named" || w == "called") && i > 0 && i+1 < len(raw) &&
				!selfWords[raw[i+1]] && !timeWords[raw[i+1]] { // "by me", "by tomorrow" say who or when
				q.Class = Search
				break
			}
		}
	}
	// "A new …" is made.
	for _, w := range raw {
		if w == "new" && q.Class&(Create|Update|Delete) == 0 {
			q.Class = q.Class&^Read | Create
		}
	}
	n, ok := verbNouns[stemOrWord(q.Verb, ws)]
	if !ok && q.Verb != "" {
		n, ok = verbNouns[q.Verb] // "watching" is watch's
	}
	if ok {
		// "Comment on a task" asks for a comment; "pin a message" pins the
		// message.
		q.VerbIsNoun = true
		noun := Stem(n)
		q.VerbNoun = noun
		if !own[noun] {
			q.Related[noun] = max(q.Related[noun], 0.7)
		}
		next := wordAfter(ws, stemOrWord(q.Verb, ws))
		if objectPronouns[next] {
			// "Remind me tomorrow": the one it is for, then what follows.
			next = wordAfter(ws, next)
		}
		if next == "" || prepositions[next] || timeWords[next] {
			q.Head = noun
			q.Related[noun] = 1
		}
	}
	if len(raw) > 0 && (raw[0] == "who" || raw[0] == "whom") && !q.Self && !namesPeople(own) {
		// Who asks about people, unless it names which ("who are the
		// members of a project": its members).
		q.Head = "user"
		for _, s := range append([]string{"user"}, synonyms["user"]...) {
			if !own[s] {
				q.Related[s] = max(q.Related[s], SynonymWeight)
			}
		}
	}
	if q.Head == "" {
		for i, w := range spelled {
			if IsStop(w) || questionStarts[w] || w == "new" || timeWords[w] || numberWords[w] || isNumber(w) {
				continue
			}
			if Stem(w) == q.Verb || lightVerbs[w] || aspectVerbs[w] != 0 && strings.HasSuffix(wordAfter(spelled, w), "ing") {
				continue
			}
			if adjectives[w] && IsPlural(wordAfter(spelled, w)) {
				continue // "open bugs" ask about bugs
			}
			if strings.HasSuffix(w, "ly") && strings.HasSuffix(wordAfter(spelled, w), "ed") {
				continue // "newly released albums"
			}
			// A noun compound names its thing by its last noun ("code
			// snippet", "newly released albums"); the nouns before it say
			// which.
			run := []string{Stem(w)}
			for j := i + 1; j < len(spelled); j++ {
				n := spelled[j]
				if IsStop(n) || prepositions[n] || timeWords[n] || numberWords[n] || isNumber(n) || strings.HasSuffix(n, "ed") {
					break
				}
				if _, isVerb := verbs[n]; strings.HasSuffix(n, "ly") && !isVerb {
					break // "a workflow manually"
				}
				if _, isVerb := verbs[n]; isVerb && j+1 < len(spelled) && determiners[spelled[j+1]] {
					break // a verb with its object
				}
				run = append(run, Stem(n))
			}
			q.Head, q.Compound = run[len(run)-1], run[:len(run)-1]
			break
		}
	}
	if len(raw) > 1 && raw[0] == "how" && raw[1] == "many" {
		// "How many …" asks for a count, which APIs give as a count, a
		// total or statistics.
		for _, w := range []string{"count", "total", "statistics"} {
			if t := Stem(w); !own[t] {
				q.Related[t] = max(q.Related[t], SynonymWeight)
			}
		}
	}
	for _, w := range spelled {
		// "A shareable link" is a link to share, "editable fields" are
		// fields to edit.
		if b, ok := ableVerb(w); ok && !own[Stem(b)] {
			q.Related[Stem(b)] = max(q.Related[Stem(b)], ableWeight)
		}
	}
	if asksContents(raw) {
		// "What's in this folder" asks for the things in it: a list of
		// its items, the folder being where they are.
		q.Class = List
		q.Head, q.Compound = "item", nil
		for _, w := range []string{"item", "content", "children", "entries"} {
			if t := Stem(w); !own[t] {
				q.Related[t] = max(q.Related[t], SynonymWeight)
			}
		}
	}
	if q.Class == 0 && q.Plural {
		// A noun phrase ("songs on an album") asks to read.
		q.Class = Get | List | Search
	}
	for t := range own {
		for _, s := range synonyms[t] {
			if !own[s] {
				q.Related[s] = max(q.Related[s], SynonymWeight)
			}
		}
		// The one who does it and the doing: follow and follower, review
		// and reviewer.
		if len(t) > 4 && verbStems[t] {
			d := t + "er"
			if strings.HasSuffix(t, "er") {
				d = strings.TrimSuffix(t, "er")
			}
			if !own[d] {
				q.Related[d] = max(q.Related[d], SynonymWeight)
			}
		}
	}
	if q.Self {
		for _, t := range []string{Stem("authenticated"), "current", "me"} {
			if !own[t] {
				q.Related[t] = max(q.Related[t], SynonymWeight)
			}
		}
	}
	q.General = map[string]float64{}
	for _, w := range spelled {
		// The vocabulary's verbs have their API senses already; the
		// general lexicon would add their other senses ("run" as a
		// score).
		if _, isVerb := verbs[w]; IsStop(w) || isVerb {
			continue
		}
		n := 0
		for _, r := range General(w) {
			if n == generalPerWord || r.Weight < generalMinWeight {
				break
			}
			t := Stem(r.Word)
			if own[t] {
				continue
			}
			n++
			if _, ok := q.Related[t]; !ok {
				q.General[t] = max(q.General[t], r.Weight)
			}
		}
	}
	return q
}

// particles end a phrasal verb and may follow its object ("take a
// label off", "kick the build off").
var particles = map[string]bool{"off": true, "on": true, "up": true, "down": true, "out": true, "over": true, "in": true, "back": true, "away": true}

// rewrite reads the phrases of ws as the words they stand for; a
// phrasal verb may have its object between its words ("take a label
// off an issue" is "remove a label … an issue").
func rewrite(ws []string) []string {
	var out []string
	for i := 0; i < len(ws); i++ {
		// "Most played", "most listened": the top ones.
		if ws[i] == "most" && i+1 < len(ws) && (strings.HasSuffix(ws[i+1], "ed") || strings.HasSuffix(ws[i+1], "ing")) {
			out = append(out, "top")
			continue
		}
		if _, isVerb := verbs[ws[i]]; isVerb || lightVerbs[ws[i]] || phrasalStarts[ws[i]] {
			found := false
			for k := i + 2; k < len(ws) && k <= i+4; k++ {
				if !particles[ws[k]] {
					if prepositions[ws[k]] {
						break
					}
					continue
				}
				if rep, ok := phrases[ws[i]+" "+ws[k]]; ok {
					out = append(out, strings.Fields(rep)...)
					out = append(out, ws[i+1:k]...)
					i = k
					found = true
				}
				break
			}
			if found {
				continue
			}
		}
		matched := false
		for n := 4; n >= 1; n-- {
			if i+n > len(ws) {
				continue
			}
			if rep, ok := phrases[strings.Join(ws[i:i+n], " ")]; ok {
				out = append(out, strings.Fields(rep)...)
				i += n - 1
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, ws[i])
		}
	}
	return out
}

// wordBefore returns the word before ws[i], "" at the start.
func wordBefore(ws []string, i int) string {
	if i == 0 {
		return ""
	}
	return ws[i-1]
}

// tellVerbs take the one told as their object ("tell me", "let me").
var tellVerbs = map[string]bool{"tell": true, "let": true, "help": true, "ask": true, "show": true, "give": true, "get": true}

// objectPronouns stand for the one an action is for ("remind me").
var objectPronouns = map[string]bool{"me": true, "us": true, "him": true, "her": true, "them": true, "you": true}

// timeWords say when, and are never what a request asks about.
var timeWords = map[string]bool{"today": true, "tomorrow": true, "tonight": true, "yesterday": true, "now": true,
	"later": true, "soon": true, "currently": true, "recently": true, "daily": true, "weekly": true, "monthly": true}

// numberWords count things and are never what a request asks about
// ("two people").
var numberWords = map[string]bool{"one": true, "two": true, "three": true, "four": true, "five": true, "six": true,
	"seven": true, "eight": true, "nine": true, "ten": true, "dozen": true, "hundred": true, "first": true, "second": true, "third": true, "last": true}

// isNumber reports whether w is written in digits.
func isNumber(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return w != ""
}

// questionStarts are the words a question starts with.
var questionStarts = map[string]bool{"which": true, "what": true, "who": true, "whom": true, "whose": true, "where": true, "when": true, "how": true}

// stemOrWord returns the word of ws whose stem is stem ("comment" for
// "comment"), or stem.
func stemOrWord(stem string, ws []string) string {
	if stem == "" {
		return ""
	}
	for _, w := range ws {
		if Stem(w) == stem {
			return w
		}
	}
	return stem
}

// prepositions start the phrase after a verb that has no object of its
// own ("comment on", "reply to").
var prepositions = map[string]bool{"on": true, "to": true, "for": true, "about": true, "in": true, "at": true, "with": true, "into": true, "onto": true, "from": true}

// wordAfter returns the word after w in ws, skipping articles; "" at the
// end.
func wordAfter(ws []string, w string) string {
	for i, x := range ws {
		if x != w {
			continue
		}
		for _, y := range ws[i+1:] {
			if y == "a" || y == "an" || y == "the" {
				continue
			}
			return y
		}
		return ""
	}
	return ""
}

// determiners start the object of a verb ("assign the task").
var determiners = map[string]bool{"a": true, "an": true, "the": true, "my": true, "our": true, "your": true, "this": true, "that": true, "these": true, "those": true, "all": true, "every": true, "some": true}

// lightVerbs carry little meaning of their own before a noun that names
// an action.
var lightVerbs = map[string]bool{"make": true, "give": true, "take": true, "do": true, "have": true, "perform": true}

// adjectives are verbs that are also states: before a plural noun they
// say which things, not what to do ("open bugs", "new releases").
var adjectives = map[string]bool{"open": true, "close": true, "closed": true, "new": true, "pending": true, "active": true, "archived": true, "starred": true, "saved": true, "pinned": true}

// verbStems are the stems of the verbs of the vocabulary.
var verbStems = func() map[string]bool {
	m := map[string]bool{}
	for w := range verbs {
		m[Stem(w)] = true
	}
	return m
}()

// namesPeople reports whether terms hold a word for people (user or one
// of its synonyms: member, attendee, collaborator).
func namesPeople(terms map[string]bool) bool {
	if terms["user"] {
		return true
	}
	for _, s := range synonyms["user"] {
		if terms[s] {
			return true
		}
	}
	return false
}

// aspectVerbs start (+1) or stop (-1) the action of the verb after them
// ("start watching", "stop following").
var aspectVerbs = map[string]int{"start": 1, "begin": 1, "stop": -1, "quit": -1}

// initialVerbs are words that are nouns more often than verbs: a
// request uses them as its verb only as its first word ("report a
// bug", "log an hour", "call a customer"), not in "the monthly report".
var initialVerbs = map[string]bool{"report": true, "log": true, "call": true, "ring": true, "link": true}

// gerundAfter returns the verb of the word after ws[i] when it is the
// -ing form of one of the vocabulary (watching, following, shipping,
// sharing).
func gerundAfter(ws []string, i int) (string, verb, bool) {
	if i+1 >= len(ws) {
		return "", verb{}, false
	}
	base, ok := strings.CutSuffix(ws[i+1], "ing")
	if !ok || len(base) < 2 {
		return "", verb{}, false
	}
	cands := []string{base, base + "e"}
	if n := len(base); n > 2 && base[n-1] == base[n-2] {
		cands = append(cands, base[:n-1]) // shipping
	}
	for _, c := range cands {
		if v, ok := verbs[c]; ok {
			return c, v, true
		}
	}
	return "", verb{}, false
}

// phrasalStarts are the first words of the phrasal verbs of phrases
// ("sign up", "hand over", "put away"), whose object may come between
// their words ("sign someone up").
var phrasalStarts = func() map[string]bool {
	m := map[string]bool{}
	for k := range phrases {
		if ws := strings.Fields(k); len(ws) == 2 && particles[ws[1]] {
			m[ws[0]] = true
		}
	}
	return m
}()

// asksContents reports whether a request asks what a thing holds
// ("what's in this folder", "what is in the trash").
func asksContents(raw []string) bool {
	if len(raw) < 3 || raw[0] != "what" {
		return false
	}
	i := 1
	if raw[1] == "s" || raw[1] == "is" || raw[1] == "are" {
		i = 2
	}
	return i < len(raw)-1 && (raw[i] == "in" || raw[i] == "inside")
}

// requestFrames are the words people put before what they ask an agent
// to do ("can you …", "I need to …", "please …"), as Words splits them
// ("I'd" is i, d). They say nothing of the task: "can you archive a
// channel" is not a question, and the I of "I want to see my payouts"
// is not whose payouts.
var requestFrames = func() [][]string {
	var out [][]string
	for _, f := range []string{
		"please", "pls", "kindly", "just",
		"can you", "could you", "would you", "will you", "can u", "could u",
		"can i", "could i", "may i", "can we", "could we",
		"i need to", "i want to", "i d like to", "i would like to", "i have to", "i must", "i wanna", "i d love to",
		"we need to", "we want to", "we d like to", "we have to", "we must",
		"i m trying to", "im trying to", "i am trying to", "trying to",
		"let s", "lets", "let me", "help me", "help me to", "go ahead and", "quickly",
		"how do i", "how can i", "how do we", "how can we", "how to", "is it possible to",
		"i need you to", "i want you to", "i d like you to",
	} {
		out = append(out, strings.Fields(f))
	}
	// Longest first, so "i need you to" is not taken for "i need to".
	slices.SortStableFunc(out, func(a, b []string) int { return len(b) - len(a) })
	return out
}()

// Request returns the words of a request without the frames it starts
// with ("can you please …"), and whether it had any; a request that is
// only a frame is returned whole.
func Request(ws []string) ([]string, bool) {
	framed := false
	for {
		found := false
		for _, f := range requestFrames {
			if len(ws) > len(f) && slices.Equal(ws[:len(f)], f) {
				ws = ws[len(f):]
				found, framed = true, true
				break
			}
		}
		if !found {
			break
		}
	}
	// "… for me" at the end: who the action is for.
	if n := len(ws); n > 2 && ws[n-2] == "for" && ws[n-1] == "me" {
		ws = ws[:n-2]
	}
	return ws, framed
}

// ableWeight is the weight of the verb of an -able word (share of
// shareable) among a query's related terms.
const ableWeight = 0.7

// ableVerb returns the verb of the vocabulary an -able or -ible word is
// made of ("shareable", "downloadable", "editable").
func ableVerb(w string) (string, bool) {
	for _, suf := range []string{"able", "ible"} {
		base, ok := strings.CutSuffix(w, suf)
		if !ok || len(base) < 3 {
			continue
		}
		for _, b := range []string{base, base + "e"} {
			if _, ok := verbs[b]; ok {
				return b, true
			}
		}
	}
	return "", false
}
