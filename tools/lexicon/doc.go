// Package lexicon knows how APIs are worded and how people ask for what
// they do: it turns text into index terms (identifiers split, Markdown
// and HTML stripped, stop words dropped, words stemmed), says what an
// HTTP operation does from its method and path (a POST on a collection
// creates, a GET on an item reads one, …), and maps the words people use
// onto the words APIs use — verb families and their CRUD sense, nouns and
// abbreviations, "me/my" for the authenticated user's operations, and a
// few general English relations for memory recall.
//
// Its vocabulary is written by hand from how API descriptions name
// things (see vocab.go); every entry is a general rule of API or English
// wording, never a phrase from a test set. Package search ranks tools
// with it and package memory expands recall queries with it; it imports
// no codecell package and knows nothing of tools or memories.
package lexicon
