package search

import (
	"strings"
	"unicode"
)

// terms splits text into index terms: identifiers are split at
// underscores, dots, dashes and camelCase boundaries ("getUser",
// "get_user" and "get user" all give get, user), letters are lower-cased,
// stop words dropped and each word stemmed.
func terms(text string) []string {
	var out []string
	for _, w := range words(text) {
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
		case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			// HTTPServer: break before S.
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the of to for in on at by from with without into onto as and or nor
		is are was were be been being it its this that these those there here which what who whom whose how
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
	{"event", "meeting", "appointment", "call"},
	{"email", "mail", "mailbox", "inbox"},
	{"payment", "charge", "pay", "transaction"},
	{"customer", "client", "buyer"},
	{"ticket", "task", "story"},
	{"issue", "bug", "defect", "problem"},
	{"repository", "repo"},
	{"channel", "room", "conversation"},
	{"forecast", "predict", "prediction", "outlook", "upcoming", "tomorrow", "future"},
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
