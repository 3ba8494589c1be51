package search

import (
	"strings"

	"github.com/codecell/codecell/tools/lexicon"
)

// terms splits text into index terms (lexicon.Terms).
func terms(text string) []string { return lexicon.Terms(text) }

func words(text string) []string { return lexicon.Words(text) }

func stem(w string) string { return lexicon.Stem(w) }

func expand(ws []string) []string { return lexicon.Spell(ws) }

var stopWords = stopSet{}

type stopSet struct{}

func (stopSet) has(w string) bool { return lexicon.IsStop(w) }

// query is what ranking needs to know of a query's text.
type query struct {
	terms []string // index terms, as terms gives them
	forms []string // inflected forms of its words, as forms gives them
	// question is set for a request for information ("which pull
	// requests are open", "who has access"), which read-only tools answer.
	question bool
	// lx is what the lexicon reads in it: its class, verbs, related
	// terms, whether it is about the one asking.
	lx lexicon.Query
	// polarity is +1 when the query asks to create or give something, -1
	// to remove or take it back, 0 when neither or both.
	polarity int8
}

func analyze(text string) query {
	req, framed := lexicon.Request(words(text))
	ws := expand(req)
	lx := lexicon.Analyze(text)
	q := query{terms: lx.Terms, forms: forms(ws), lx: lx}
	if len(ws) > 0 {
		q.question = questionWords[ws[0]] ||
			(ws[0] == "how" && len(ws) > 1 && (ws[1] == "much" || ws[1] == "many")) ||
			strings.HasSuffix(strings.TrimSpace(text), "?") && !framed
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
		if !stopWords.has(w) && strings.HasSuffix(w, "s") && stem(w) != w {
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

// Ranking factors. They are variables only so that TestFit can search
// them (cross-validated across the dev set's APIs); nothing changes them
// at run time.
var (
	// formWeight is the weight of an inflected form's exact match,
	// beside the match of its stem.
	formWeight = 0.3
	// bigramWeight is the weight of a pair of query terms found together
	// in a tool's name.
	bigramWeight = 0.5
	// questionFactor scales the score of a tool that is not read-only for
	// a question: questions ask to read, not to change.
	questionFactor = 0.6
	// oppositeFactor scales the score of a tool whose verb has the
	// opposite polarity of the query's.
	oppositeFactor = 0.65
	// actionFactor scales the score of a read-only tool for a query that
	// asks to create or remove something.
	actionFactor = 0.7
	// classBoost raises a tool whose CRUD sense is the query's
	// (lexicon.Class); readWriteFactor lowers one that writes for a query
	// that reads, or reads for one that writes; createDeleteFactor one
	// that removes for a query that creates, or the other way round;
	// otherWriteFactor one that writes otherwise than asked (updates for
	// a create).
	classBoost = 0.6
	// variantWeight is the weight of another form of a query word
	// (index.variantsOf: registrant for "registered").
	variantWeight = 0.4
	// pluralGetShare is the share of classBoost a tool that reads one
	// thing gets for a query that asks for many ("who are the members").
	pluralGetShare     = 0.25
	readWriteFactor    = 0.55
	createDeleteFactor = 0.45
	otherWriteFactor   = 1.0
	// objectBoost raises a tool whose object, the resource it acts on,
	// the query names (or names by a synonym, at its weight).
	objectBoost = 1.0
	// objectMissFactor lowers a tool whose object the query does not
	// name.
	objectMissFactor = 0.75
	// verbTermWeight is the weight of the query's verb as a term.
	verbTermWeight = 0.7
	// namedBoost raises the tools of a category the query names;
	// unnamedFactor lowers the others.
	namedBoost    = 1.5
	unnamedFactor = 0.5
	// categoryBoost raises, for a query that names no category, the
	// tools of the categories whose tools speak most of its words
	// (categoryFit), up to 1 + categoryBoost for the best.
	categoryBoost = 0.3
	// contextBoost raises a tool under a resource the query names;
	// attributeBoost one that sets a field the query asks to set.
	contextBoost   = 0.25
	attributeBoost = 1.0
	// verbBoost raises a tool whose named action the query asks for.
	verbBoost = 0.45
	// selfBoost raises a tool on the authenticated user's own things for
	// a query about oneself ("my repos"); otherFactor lowers it for one
	// that is not.
	selfBoost     = 0.0
	otherFactor   = 0.85
	notSelfFactor = 0.8
	// otherObjectShare is the share of objectBoost a tool gets whose
	// object the query names but not as what it asks about ("songs on an
	// album": the album's songs, not the album).
	otherObjectShare = 0.4
	// candidatesPerHit and minCandidates bound the documents scored in
	// full: the best by their words alone, limit × candidatesPerHit of
	// them and at least minCandidates.
	candidatesPerHit = 40
	minCandidates    = 300
	// learnWeight is the field weight of a query word that learning from
	// use linked to a tool: that of its name.
	learnWeight = 4.0
	// learnShare is the least share of a query's words (by idf) that must
	// have led to a tool for what was learned to count.
	learnShare = 0.85
	// learnCover is the least share of the words that led to a tool (by
	// count × idf) a query must hold for what was learned to count: a
	// query that is part of a longer task learned is another task.
	learnCover = 0.7
	// generalWeight scales the weight of a word related to the query's
	// in general English (lexicon.Query.General).
	generalWeight = 0.1
	// headBoost raises a tool whose object is the thing the query asks
	// about, beside objectBoost; partFactor lowers one that acts on a
	// part of it (the thing is its context, not its object).
	headBoost  = 0.0
	partFactor = 0.65
	// headMissFactor lowers a tool that does not name what the query
	// asks about (its head noun), in its words or a synonym.
	headMissFactor = 0.5
	// contextMissFactor lowers a tool for each resource above its
	// object that the query does not name.
	contextMissFactor = 0.9
	// coordFloor is the share of its score a tool keeps that matches
	// none of the query's own words; one that matches them all keeps it
	// whole (the coordination factor of classic retrieval models).
	coordFloor = 0.5
	// verbSenseTerms is the least number of terms of a query whose verb
	// counts by its sense (verbTermWeight) more than by its letters.
	verbSenseTerms = 2.0
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
	nameBoost = 0.45
)
