package search

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/codecell/codecell/tools"
)

// termCache keeps each tool's terms (toolTerms) between starts, when the
// registry names a snapshot directory (tools.Registry.SetSnapshots): a
// file per category, so that a restart reads them rather than analysing
// every tool again. Nothing is held in memory but each tool's hash, in
// its document (corpus.go): 5,300 tools' terms are 34 MiB.
//
// A category's file holds its tools' terms, each under the SHA-256 of
// what analysis reads of the tool (name, title, summary, description,
// group, route, read-only hint, schemas and the definitions they share),
// behind a header naming the file's format and codecell's build: a tool
// that changed is analysed again, and a file of another build or format,
// cut short or corrupt (its checksum), is not used. It holds what the
// catalogue's pages say, never a credential or a caller's data.
type termCache struct {
	reg *tools.Registry

	mu   sync.Mutex
	defs map[*tools.Definitions][32]byte
}

// termsFormat is the version of a terms file's layout and of toolTerms;
// it changes whenever either does.
const termsFormat = 2

// termsMagic starts every terms file.
const termsMagic = "codecell search terms\n"

// termsFile is a terms file's payload.
type termsFile struct {
	Format  int
	Version string
	Terms   map[[32]byte]*toolTerms
}

// termsOf returns the terms of each of ts: read from their categories'
// files, else made (and then kept, each category's file with the terms
// of the tools live names: those already in the corpus, and ts). Each
// kept tool's terms carry its hash. A nil termCache makes them all.
func (tc *termCache) termsOf(ts []*tools.Tool, live func(category string) map[[32]byte]bool) []*toolTerms {
	sd := newSchemaDocs()
	out := make([]*toolTerms, len(ts))
	var dir, version string
	if tc != nil && tc.reg != nil {
		dir, version = tc.reg.Snapshots()
	}
	if dir == "" {
		for i, t := range ts {
			out[i] = analyzeTool(t, sd)
		}
		return out
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	files := map[string]map[[32]byte]*toolTerms{} // category → its file's terms
	made := map[string]bool{}                     // categories with terms made now
	hashes := make([][32]byte, len(ts))
	for i, t := range ts {
		if !kept(t) {
			out[i] = analyzeTool(t, sd)
			continue
		}
		h := tc.hash(t)
		hashes[i] = h
		cat := t.Category()
		f, ok := files[cat]
		if !ok {
			f, _ = readTerms(termsPath(dir, cat), version)
			files[cat] = f
		}
		tt := f[h]
		if tt == nil {
			tt = analyzeTool(t, sd)
			made[cat] = true
		}
		// A copy: the file's terms may serve two tools of one text.
		c := *tt
		c.hash = h
		out[i] = &c
	}
	for cat := range made {
		terms := map[[32]byte]*toolTerms{}
		var keep map[[32]byte]bool
		if live != nil {
			keep = live(cat)
		}
		for h, tt := range files[cat] {
			if keep[h] {
				terms[h] = tt
			}
		}
		for i, t := range ts {
			if kept(t) && t.Category() == cat {
				terms[hashes[i]] = out[i]
			}
		}
		writeTerms(dir, version, cat, terms)
	}
	return out
}

// kept says whether a tool's terms go to its category's file: a
// registered tool's do, a page's (PageDocs: a name without a category)
// do not.
func kept(t *tools.Tool) bool { return strings.Contains(t.Name, ".") }

// hash is the SHA-256 of what analyzeTool reads of t.
func (tc *termCache) hash(t *tools.Tool) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, s := range []string{t.Name, t.Title, t.Summary, t.Description, t.Group, t.Route} {
		field([]byte(s))
	}
	if t.Annotations.ReadOnly {
		field([]byte{1})
	} else {
		field([]byte{0})
	}
	field(t.InputSchema)
	d := tc.defsHash(t.InputDefs)
	field(d[:])
	field(t.OutputSchema)
	d = tc.defsHash(t.OutputDefs)
	field(d[:])
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// defsHash is the SHA-256 of shared definitions, once per Definitions
// (they never change); zero for none.
func (tc *termCache) defsHash(d *tools.Definitions) [32]byte {
	if d == nil {
		return [32]byte{}
	}
	if tc.defs == nil {
		tc.defs = map[*tools.Definitions][32]byte{}
	}
	if sum, ok := tc.defs[d]; ok {
		return sum
	}
	h := sha256.New()
	for _, n := range d.Names() {
		raw, _ := d.Get(n)
		var l [8]byte
		binary.BigEndian.PutUint64(l[:], uint64(len(n)))
		h.Write(l[:])
		h.Write([]byte(n))
		binary.BigEndian.PutUint64(l[:], uint64(len(raw)))
		h.Write(l[:])
		h.Write(raw)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	tc.defs[d] = sum
	return sum
}

func termsPath(dir, category string) string { return filepath.Join(dir, category+".terms") }

func readTerms(path, version string) (map[[32]byte]*toolTerms, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(data, []byte(termsMagic))
	if !ok || len(rest) < sha256.Size {
		return nil, errors.New("not a terms file, or cut short")
	}
	sum, payload := rest[:sha256.Size], rest[sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch")
	}
	var f termsFile
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&f); err != nil {
		return nil, err
	}
	if f.Format != termsFormat || f.Version != version {
		return nil, errors.New("of another format or build")
	}
	return f.Terms, nil
}

// writeTerms keeps category's terms, atomically: a reader sees the old file
// or the new one. A failure keeps nothing; the next start analyses
// again.
func writeTerms(dir, version, category string, terms map[[32]byte]*toolTerms) {
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(termsFile{Format: termsFormat, Version: version, Terms: terms}); err != nil {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(dir, "."+category+"-*.tmp")
	if err != nil {
		return
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone once renamed
	sum := sha256.Sum256(payload.Bytes())
	_, err = f.Write(append([]byte(termsMagic), sum[:]...))
	if err == nil {
		_, err = f.Write(payload.Bytes())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_ = os.Rename(tmp, termsPath(dir, category))
	}
}
