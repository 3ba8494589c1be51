package search

import (
	"strings"
	"unicode"
)

// terms splits text into index terms: identifiers are split at
// underscores, dots, dashes and camelCase boundaries ("getUser",
// "get_user" and "get user" all give get, user), letters are lower-cased,
// abbreviations spelled out (PRs: pull requests), stop words dropped and
// each word stemmed.
func terms(text string) []string {
	var out []string
	for _, w := range expand(words(text)) {
		if stopWords[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// words splits text into lower-case words of letters and digits, breaking
// camelCase ("searchIssues", "HTTPServer" → http, server).
func words(text string) []string {
	var out []string
	rs := []rune(text)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			// getUser: break before U.
			flush(i)
			start = i
		case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]) && !acronymPlural(rs, i+1):
			// HTTPServer: break before S; but PRs and URLs are one word.
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}

// acronymPlural reports whether rs[i] is the "s" that ends a word, as in
// PRs, URLs and IDs.
func acronymPlural(rs []rune, i int) bool {
	return rs[i] == 's' && (i+1 == len(rs) || !unicode.IsLetter(rs[i+1]) && !unicode.IsDigit(rs[i+1]))
}

// abbreviations are words agents write for several words a catalogue
// spells out.
var abbreviations = map[string][]string{
	"pr":  {"pull", "request"},
	"prs": {"pull", "requests"},
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the of to for in on at by from with without into onto as and or nor
		is are was were be been being it its this that these those there here which what whom whose how
		when where why i me my we our you your he she they them their his her can could should would will
		shall may might must do does did done have has had having not no yes so if then than also just
		only very too some any all each every both either neither such via per about over under up down
		out off again more most other same own e g eg ie etc let lets want need please`) {
		m[w] = true
	}
	return m
}()

// stem is a light English stemmer: it folds plurals and the -ing and -ed
// forms of verbs onto a common stem and drops a final silent e, so that
// "issues"/"issue", "created"/"creating"/"create" and
// "scheduled"/"schedule" meet. It is deliberately conservative: words of
// three letters or fewer are left alone, and of four-letter words only
// plurals are folded.
func stem(w string) string {
	if len(w) < 4 || !isASCIILetters(w) {
		return w
	}
	if len(w) == 4 {
		// Short plurals only: "days", "bugs", "logs".
		if w[3] == 's' && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is") {
			return w[:3]
		}
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 5:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "zes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ee") && len(w) > 6:
		// The one it is done to: assignee, attendee, invitee.
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ied") && len(w) > 5:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ed") && len(w) > 4 && !strings.HasSuffix(w, "eed"):
		w = undouble(w[:len(w)-2])
	}
	if strings.HasSuffix(w, "e") && len(w) > 4 {
		w = w[:len(w)-1]
	}
	return w
}

// undouble turns a doubled final consonant into one: "stopp" → "stop".
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// synonymGroups are words an agent uses for the same operation or thing.
// A query word also matches the other words of its groups, at a lower
// weight (synonymWeight).
var synonymGroups = [][]string{
	{"get", "fetch", "retrieve", "read", "show", "view", "load", "lookup", "look"},
	{"list", "enumerate", "browse", "all"},
	{"search", "find", "query", "lookup", "look", "locate", "filter", "list"},
	{"create", "add", "new", "make", "insert", "start"},
	{"delete", "remove", "destroy", "erase", "drop", "trash", "purge"},
	{"update", "edit", "modify", "change", "patch", "set", "rename", "replace"},
	{"send", "post", "deliver", "notify", "message"},
	{"reply", "respond", "answer"},
	{"cancel", "stop", "end", "terminate", "void"},
	{"schedule", "book", "plan", "arrange"},
	{"user", "person", "people", "member", "account", "colleague", "teammate"},
	{"file", "document", "doc", "spreadsheet", "sheet"},
	{"event", "meeting", "appointment", "call", "calendar"},
	{"email", "mail", "mailbox", "inbox"},
	{"payment", "charge", "pay", "transaction"},
	{"bill", "invoice"},
	{"customer", "client", "buyer"},
	{"ticket", "task", "story"},
	{"issue", "bug", "defect", "problem"},
	{"repository", "repo"},
	{"channel", "room", "conversation"},
	{"forecast", "predict", "prediction", "outlook", "upcoming", "tomorrow", "future"},
	{"tomorrow", "today", "tonight", "upcoming", "time", "date"},
	{"day", "daily", "week", "weekly"},
	{"table", "schema"},
	{"download", "save"},
	{"free", "available", "availability"},
	{"share", "permission", "access", "grant", "give"},
	{"website", "url", "site", "page", "link"},
}

const synonymWeight = 0.4

// synonyms maps a stemmed word to the stemmed words it may stand for.
var synonyms = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		stems := make([]string, len(g))
		for i, w := range g {
			stems[i] = stem(w)
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

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// expand replaces abbreviations by the words they stand for.
func expand(ws []string) []string {
	for i, w := range ws {
		if exp, ok := abbreviations[w]; ok {
			out := append(append([]string(nil), ws[:i]...), exp...)
			return append(out, expand(ws[i+1:])...)
		}
	}
	return ws
}

// query is what ranking needs to know of a query's text.
type query struct {
	terms []string // index terms, as terms gives them
	forms []string // inflected forms of its words, as forms gives them
	// question is set for a request for information ("which pull
	// requests are open", "who has access"), which read-only tools answer.
	question bool
	// polarity is +1 when the query asks to create or give something, -1
	// to remove or take it back, 0 when neither or both.
	polarity int8
}

func analyze(text string) query {
	ws := expand(words(text))
	q := query{terms: terms(text), forms: forms(ws)}
	if len(ws) > 0 {
		q.question = questionWords[ws[0]] ||
			(ws[0] == "how" && len(ws) > 1 && (ws[1] == "much" || ws[1] == "many")) ||
			strings.HasSuffix(strings.TrimSpace(text), "?")
	}
	var plus, minus bool
	for i, w := range ws {
		p := polarity[stem(w)]
		if p == 0 {
			continue
		}
		if i > 0 && negators[ws[i-1]] {
			// "stop sharing" takes back what "sharing" gives.
			p = -p
		} else if negators[w] && i+1 < len(ws) && polarity[stem(ws[i+1])] != 0 {
			continue // the next word carries it
		}
		if p > 0 {
			plus = true
		} else {
			minus = true
		}
	}
	switch {
	case plus && !minus:
		q.polarity = 1
	case minus && !plus:
		q.polarity = -1
	}
	return q
}

// negators turn the verb after them around.
var negators = map[string]bool{"stop": true, "cease": true, "no": true, "not": true, "never": true}

// questionWords start a request for information.
var questionWords = map[string]bool{"which": true, "what": true, "who": true, "whom": true, "whose": true, "when": true, "where": true}

// forms returns, for each plural word ("requests", "queries"), the word
// itself as a term of its own, marked with "=". The name field indexes
// them too, so a query in the plural prefers list_pull_requests to
// get_pull_request while still matching both.
func forms(ws []string) []string {
	var out []string
	for _, w := range ws {
		if !stopWords[w] && strings.HasSuffix(w, "s") && stem(w) != w {
			out = append(out, "="+w)
		}
	}
	return out
}

// bigrams returns each pair of consecutive terms as one term ("pull
// request"). The name field indexes them too, so a query that names a
// tool's object in its words ("pull requests") prefers the tools whose
// names hold it to those whose text mentions both words apart.
func bigrams(ts []string) []string {
	var out []string
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i-1]+" "+ts[i])
	}
	return out
}

// polarity says whether a verb brings something into being or gives it
// (+1), or removes it or takes it back (-1). A query of one polarity
// ranks tools whose name starts with a verb of the other lower: "give a
// colleague access" is not revoke_permission, "refund a payment" not
// create_charge. Keys are stems.
var polarity = func() map[string]int8 {
	m := map[string]int8{}
	for _, w := range strings.Fields("create add new make insert give grant share invite upload book schedule post send start begin") {
		m[stem(w)] = 1
	}
	for _, w := range strings.Fields("delete remove destroy erase drop trash purge revoke unshare cancel void refund terminate stop") {
		m[stem(w)] = -1
	}
	return m
}()

// Ranking factors.
const (
	// formWeight is the weight of an inflected form's exact match,
	// beside the match of its stem.
	formWeight = 0.7
	// bigramWeight is the weight of a pair of query terms found together
	// in a tool's name.
	bigramWeight = 0.5
	// questionFactor scales the score of a tool that is not read-only for
	// a question: questions ask to read, not to change.
	questionFactor = 0.6
	// oppositeFactor scales the score of a tool whose verb has the
	// opposite polarity of the query's.
	oppositeFactor = 0.5
	// actionFactor scales the score of a read-only tool for a query that
	// asks to create or remove something.
	actionFactor = 0.7
	// deprecatedFactor scales the score of a deprecated tool: its
	// replacement should come first.
	deprecatedFactor = 0.6
	// summaryBoost weighs how closely a tool's summary says what the
	// query asks: the score is scaled by 1 + summaryBoost × J², J the
	// Jaccard similarity of the query's terms and the summary's. A summary
	// is the one line that states what a tool does; one that says just
	// what was asked ("Merge a pull request" for "merge a pull request")
	// beats a tool whose longer name or text merely mentions the same
	// words, while a summary that shares one word of many barely counts.
	summaryBoost = 1.5
	// nameBoost weighs how much of a tool's name the query covers: the
	// score is scaled by 1 + nameBoost × the share of the name's distinct
	// terms that are query terms. A short name that the query spells out
	// (pulls_list for "list pull requests") beats a long one that holds
	// the query's words among many others.
	nameBoost = 0.5
)
