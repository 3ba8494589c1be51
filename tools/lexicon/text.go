package lexicon

import (
	"html"
	"regexp"
	"strings"
	"unicode"
)

// Terms splits text into index terms: identifiers are split at
// underscores, dots, dashes and camelCase boundaries ("getUser",
// "get_user" and "get user" all give get, user), letters are lower-cased,
// abbreviations spelled out (PRs: pull requests), stop words dropped and
// each word stemmed.
func Terms(text string) []string {
	var out []string
	for _, w := range Spell(Words(text)) {
		if IsStop(w) {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}

// Words splits text into lower-case words of letters and digits,
// breaking camelCase ("searchIssues", "HTTPServer" → http, server).
func Words(text string) []string {
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

// Spell replaces the abbreviations of ws by the words they stand for
// ("prs" → pull, requests; "repo" → repository).
func Spell(ws []string) []string {
	var out []string
	for i, w := range ws {
		if exp, ok := abbreviations[w]; ok {
			if out == nil {
				out = append(make([]string, 0, len(ws)+2), ws[:i]...)
			}
			out = append(out, exp...)
			continue
		}
		if out != nil {
			out = append(out, w)
		}
	}
	if out == nil {
		return ws
	}
	return out
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the of to for in on at by from with without into onto as and or nor
		is are was were be been being it its this that these those there here which what whom whose how
		when where why i me my mine myself we our you your he she they them their his her can could should would will
		shall may might must do does did done have has had having not no yes so if then than also just
		only very too some any all each every both either neither such via per about over under up down
		out off again more most other same own e g eg ie etc let lets want need please several many few various`) {
		m[w] = true
	}
	return m
}()

// IsStop reports whether w, lower-case, is a stop word.
func IsStop(w string) bool { return stopWords[w] }

// Stem is a light English stemmer: it folds plurals and the -ing and -ed
// forms of verbs onto a common stem and drops a final silent e, so that
// "issues"/"issue", "created"/"creating"/"create" and
// "scheduled"/"schedule" meet. It is deliberately conservative: words of
// three letters or fewer are left alone, and of four-letter words only
// plurals are folded.
func Stem(w string) string {
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
	case strings.HasSuffix(w, "ability") && len(w) > 8, strings.HasSuffix(w, "ibility") && len(w) > 8:
		// The quality and the adjective: danceability, danceable.
		w = w[:len(w)-5] + "le"
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

// IsPlural reports whether w, lower-case, reads as a plural noun: it
// ends in s and stems to something shorter ("issues", "repos"), but not
// in ss, us or is ("access", "status", "analysis").
func IsPlural(w string) bool {
	return len(w) > 3 && !massNouns[w] && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is") && Stem(w) != w
}

// massNouns end in s but name one thing: "the details of a pull
// request" asks for one.
var massNouns = map[string]bool{"details": true, "contents": true, "settings": true, "preferences": true, "news": true,
	"analytics": true, "statistics": true, "metrics": true, "stats": true, "permissions": true, "credentials": true, "properties": true}

var (
	htmlTag     = regexp.MustCompile(`<[^>]{0,400}>`)
	mdLink      = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	mdRefLink   = regexp.MustCompile(`\[([^\]]*)\]\[[^\]]*\]`)
	bareURL     = regexp.MustCompile(`https?://\S+`)
	mdDecor     = regexp.MustCompile("[*_`~#>|]+")
	codeFence   = regexp.MustCompile("(?s)```.*?```")
	spaceRunsRE = regexp.MustCompile(`\s+`)
)

// Clean strips HTML tags and entities and Markdown decoration (links keep
// their text, code fences and URLs go) from an API's description, and
// collapses white space, leaving prose to index.
func Clean(text string) string {
	if !strings.ContainsAny(text, "<>&[]()*_`~#|") && !strings.Contains(text, "http") {
		return strings.Join(strings.Fields(text), " ")
	}
	s := codeFence.ReplaceAllString(text, " ")
	s = htmlTag.ReplaceAllStringFunc(s, func(tag string) string {
		// Block tags end a sentence where the text has no period.
		switch t := strings.ToLower(strings.Trim(tag, "</> ")); {
		case strings.HasPrefix(t, "p"), strings.HasPrefix(t, "br"), strings.HasPrefix(t, "li"), strings.HasPrefix(t, "h"):
			return "\n"
		}
		return " "
	})
	s = html.UnescapeString(s)
	s = mdLink.ReplaceAllString(s, "$1")
	s = mdRefLink.ReplaceAllString(s, "$1")
	s = bareURL.ReplaceAllString(s, " ")
	s = mdDecor.ReplaceAllString(s, " ")
	return strings.TrimSpace(spaceRunsRE.ReplaceAllStringFunc(s, func(sp string) string {
		if strings.Contains(sp, "\n") {
			return "\n"
		}
		return " "
	}))
}

// Lead splits cleaned text into its first sentence, which says what an
// operation does, and the rest.
func Lead(text string) (lead, rest string) {
	text = strings.TrimSpace(text)
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			return strings.TrimSpace(text[:i]), strings.TrimSpace(text[i+1:])
		case '.', '!', '?':
			if i+1 == len(text) {
				return text, ""
			}
			if c := text[i+1]; c == ' ' || c == '\n' {
				// "e.g. " and "i.e. " do not end a sentence.
				if i >= 3 && (text[i-3:i] == "e.g" || text[i-3:i] == "i.e") {
					continue
				}
				return strings.TrimSpace(text[:i+1]), strings.TrimSpace(text[i+1:])
			}
		}
	}
	return text, ""
}
