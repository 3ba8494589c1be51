package openapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/codecell/codecell/tools"
)

// A snapshot is what a source made of its document (built, without its
// handlers), kept in a file so that a restart reads it rather than
// parsing the document and converting its schemas again. Its key is the
// SHA-256 of the document's bytes, the source's name and configuration,
// codecell's version (Options.Version) and the snapshot's format: a
// change of any makes another key, and the source is built again. A
// snapshot holds the document's operations and schemas and the
// configuration's hash, never a credential: secrets are read from the
// environment and added to requests as they leave.
//
// The file is written to a temporary name and renamed, so a reader sees a
// whole snapshot or none; it starts with a header that names the format,
// the key and the SHA-256 and length of what follows. A snapshot that is
// truncated, corrupt, of another key or format, or that does not decode
// is not used: the source is built from its document, and the snapshot
// written again.

// snapshotFormat is the version of what a snapshot holds; it changes
// whenever built or operation does in a way a snapshot must follow.
const snapshotFormat = 3

// snapshotMagic starts every snapshot file.
const snapshotMagic = "codecell openapi snapshot\n"

// snapshotExt ends a snapshot's file name.
const snapshotExt = ".snapshot"

// headerSize is the size of a snapshot file's header: the magic, the
// format (4 bytes), the key and the payload's checksum (32 bytes each)
// and the payload's length (8 bytes).
const headerSize = len(snapshotMagic) + 4 + 32 + 32 + 8

// snapshotKey is the key of the snapshot of doc as s's configuration,
// name and codecell's version would make it.
func (s *Source) snapshotKey(doc []byte) [32]byte {
	cfg, _ := json.Marshal(s.cfg) // the configuration as written: names of variables, never their values
	docSum := sha256.Sum256(doc)
	h := sha256.New()
	fmt.Fprintf(h, "format %d\nversion %q\nname %q\ncategory %q\nconfig %s\ndocument %x\n",
		snapshotFormat, s.opts.Version, s.name, s.category, cfg, docSum)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// snapshotPath is where the snapshot of key is kept: the category and
// the key's start, so that a changed document or configuration writes
// another file and removes the old one.
func (s *Source) snapshotPath(key [32]byte) string {
	return filepath.Join(s.opts.SnapshotDir, s.category+"-"+hex.EncodeToString(key[:8])+snapshotExt)
}

// ownSnapshot reports whether the file name is one snapshotPath gives
// this source's category: the category, a hyphen, 16 hex digits and
// snapshotExt, exactly — never another category's file whose name
// starts with this one's and a hyphen.
func (s *Source) ownSnapshot(name string) bool {
	rest, ok := strings.CutPrefix(name, s.category+"-")
	if !ok {
		return false
	}
	key, ok := strings.CutSuffix(rest, snapshotExt)
	return ok && len(key) == 16 && isHex(key)
}

// ownTemp reports whether the file name is one of this source's
// temporary files (writeSnapshot's os.CreateTemp pattern, whose random
// part is decimal digits).
func (s *Source) ownTemp(name string) bool {
	rest, ok := strings.CutPrefix(name, "."+s.category+"-")
	if !ok {
		return false
	}
	digits, ok := strings.CutSuffix(rest, ".tmp")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}

func isHex(v string) bool {
	return strings.Trim(v, "0123456789abcdef") == ""
}

// snapshot is the payload of a snapshot file.
type snapshot struct {
	Title, Version string
	Tools          []snapTool
	Ops            []snapOp
	Defs           [2]map[string][]byte
	Problems       []Problem
	Paged          int
	CredHost       string
	Over, MaxOps   int
}

type snapTool struct {
	Name, Summary, Description, Notes, Group, Route string
	Input, Output                                   []byte
	InRefs, OutRefs                                 bool
	Annotations                                     tools.Annotations
	Errors                                          []tools.ErrorDoc
	Deprecated                                      bool
}

type snapOp struct {
	ID, Name, Method, Path, Base, Group string
	Params                              []snapParam
	Body                                *snapBody
	Cursor                              *snapCursor
	Linked                              bool
}

type snapParam struct {
	Name, In, Prop, Style          string
	Explode, Reserved, Required, J bool
	MaxValue                       float64
}

type snapBody struct {
	MediaType string
	Kind      int
	Required  bool
	// Merged is set when the body's properties are arguments, Props
	// then naming them; Prop names the one argument otherwise.
	Merged   bool
	Props    []string
	Prop     string
	Encoding map[string]snapEncoding
	Binary   []string
}

type snapEncoding struct {
	ContentType, Style string
	// Explode is kept as two flags: gob sends no pointer to false.
	SetExplode, Explode bool
	AllowReserved       bool
}

type snapCursor struct {
	Param                         string
	Next, NextURL, HasMore, Items []string
	LastID                        bool
}

// toSnapshot copies what b holds into a snapshot.
func (b *built) toSnapshot() *snapshot {
	sn := &snapshot{Title: b.title, Version: b.version, Problems: b.problems, Paged: b.paged, CredHost: b.credHost, Over: b.over, MaxOps: b.maxOps}
	for dir := range b.defs {
		sn.Defs[dir] = make(map[string][]byte, len(b.defs[dir]))
		for n, d := range b.defs[dir] {
			sn.Defs[dir][n] = d
		}
	}
	for i, t := range b.tools {
		if b.ops[t.ShortName()] == nil {
			continue // the paginate tool, made again from Paged
		}
		sn.Tools = append(sn.Tools, snapTool{
			Name: t.Name, Summary: t.Summary, Description: t.Description, Notes: t.Notes, Group: t.Group, Route: t.Route,
			Input: t.InputSchema, Output: t.OutputSchema, InRefs: b.refers[i][input], OutRefs: b.refers[i][output],
			Annotations: t.Annotations, Errors: t.Errors, Deprecated: t.Deprecated,
		})
	}
	for _, name := range sortedKeysOf(b.ops) {
		o := b.ops[name]
		so := snapOp{ID: o.id, Name: o.name, Method: o.method, Path: o.path, Base: o.base.String(), Group: o.group, Linked: o.linked}
		for _, p := range o.params {
			so.Params = append(so.Params, snapParam{Name: p.name, In: p.in, Prop: p.prop, Style: p.style,
				Explode: p.explode, Reserved: p.reserved, Required: p.required, J: p.json, MaxValue: p.maxValue})
		}
		if bd := o.body; bd != nil {
			sb := &snapBody{MediaType: bd.mediaType, Kind: int(bd.kind), Required: bd.required, Merged: bd.merged != nil,
				Props: bd.merged, Prop: bd.prop, Binary: sortedKeysOf(bd.binary)}
			if bd.encoding != nil {
				sb.Encoding = map[string]snapEncoding{}
				for k, e := range bd.encoding {
					if e != nil {
						se := snapEncoding{ContentType: e.ContentType, Style: e.Style, AllowReserved: e.AllowReserved}
						if e.Explode != nil {
							se.SetExplode, se.Explode = true, *e.Explode
						}
						sb.Encoding[k] = se
					}
				}
			}
			so.Body = sb
		}
		if c := o.cursor; c != nil {
			so.Cursor = &snapCursor{Param: c.param, Next: c.next, NextURL: c.nextURL, HasMore: c.hasMore, Items: c.items, LastID: c.lastID}
		}
		sn.Ops = append(sn.Ops, so)
	}
	return sn
}

// built makes what the snapshot holds again, for s; link gives it its
// handlers and definitions.
func (sn *snapshot) built(s *Source) (*built, error) {
	b := &built{title: sn.Title, version: sn.Version, problems: sn.Problems, paged: sn.Paged, credHost: sn.CredHost, over: sn.Over, maxOps: sn.MaxOps, ops: map[string]*operation{}}
	for dir := range sn.Defs {
		b.defs[dir] = make(map[string]json.RawMessage, len(sn.Defs[dir]))
		for n, d := range sn.Defs[dir] {
			b.defs[dir][n] = d
		}
	}
	for _, so := range sn.Ops {
		base, err := url.Parse(so.Base)
		if err != nil || so.Name == "" {
			return nil, fmt.Errorf("operation %q: base URL %q", so.Name, so.Base)
		}
		o := &operation{id: so.ID, name: so.Name, method: so.Method, path: so.Path, base: base, group: so.Group, linked: so.Linked}
		for _, sp := range so.Params {
			o.params = append(o.params, &param{name: sp.Name, in: sp.In, prop: sp.Prop, style: sp.Style,
				explode: sp.Explode, reserved: sp.Reserved, required: sp.Required, json: sp.J, maxValue: sp.MaxValue})
		}
		if sb := so.Body; sb != nil {
			bd := &body{mediaType: sb.MediaType, kind: bodyKind(sb.Kind), required: sb.Required, prop: sb.Prop, binary: map[string]bool{}}
			if sb.Merged {
				bd.merged = append([]string{}, sb.Props...)
			}
			for _, k := range sb.Binary {
				bd.binary[k] = true
			}
			if sb.Encoding != nil {
				bd.encoding = map[string]*openapi3.Encoding{}
				for k, e := range sb.Encoding {
					enc := &openapi3.Encoding{ContentType: e.ContentType, Style: e.Style, AllowReserved: e.AllowReserved}
					if e.SetExplode {
						enc.Explode = &e.Explode
					}
					bd.encoding[k] = enc
				}
			}
			o.body = bd
		}
		if c := so.Cursor; c != nil {
			o.cursor = &cursor{param: c.Param, next: c.Next, nextURL: c.NextURL, hasMore: c.HasMore, items: c.Items, lastID: c.LastID}
		}
		b.ops[o.name] = o
	}
	for _, st := range sn.Tools {
		t := tools.Tool{Name: st.Name, Summary: st.Summary, Description: st.Description, Notes: st.Notes, Group: st.Group, Route: st.Route,
			InputSchema: st.Input, OutputSchema: st.Output, Annotations: st.Annotations, Errors: st.Errors, Deprecated: st.Deprecated}
		o := b.ops[t.ShortName()]
		if o == nil {
			return nil, fmt.Errorf("tool %s has no operation", t.Name)
		}
		t.Aliases = aliasesOf(o)
		b.tools = append(b.tools, t)
		b.refers = append(b.refers, [2]bool{st.InRefs, st.OutRefs})
	}
	if len(b.tools) == 0 {
		return nil, errors.New("no tools")
	}
	if b.paged > 0 {
		b.tools = append(b.tools, s.paginateTool())
		b.refers = append(b.refers, [2]bool{})
	}
	return b, nil
}

// errNoSnapshot says there is no snapshot of the key: the first start
// with this document, configuration and version.
var errNoSnapshot = errors.New("no snapshot")

// readSnapshot reads the snapshot of key, checking that it is whole and
// of this key and format.
func (s *Source) readSnapshot(key [32]byte) (*built, error) {
	data, err := os.ReadFile(s.snapshotPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoSnapshot
	}
	if err != nil {
		return nil, err
	}
	if len(data) < headerSize || !bytes.HasPrefix(data, []byte(snapshotMagic)) {
		return nil, errors.New("not a snapshot, or cut short")
	}
	h := data[len(snapshotMagic):]
	if f := binary.BigEndian.Uint32(h); f != snapshotFormat {
		return nil, fmt.Errorf("format %d, want %d", f, snapshotFormat)
	}
	if !bytes.Equal(h[4:36], key[:]) {
		return nil, errors.New("of another document, configuration or version")
	}
	sum, n := h[36:68], binary.BigEndian.Uint64(h[68:76])
	payload := data[headerSize:]
	if uint64(len(payload)) != n {
		return nil, fmt.Errorf("%d bytes of %d: cut short", len(payload), n)
	}
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch: corrupt")
	}
	var sn snapshot
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&sn); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return sn.built(s)
}

// writeSnapshot keeps b as the snapshot of key, atomically, and removes
// the source's snapshots of other keys.
func (s *Source) writeSnapshot(key [32]byte, b *built) error {
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(b.toSnapshot()); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	head := make([]byte, 0, headerSize)
	head = append(head, snapshotMagic...)
	head = binary.BigEndian.AppendUint32(head, snapshotFormat)
	head = append(head, key[:]...)
	sum := sha256.Sum256(payload.Bytes())
	head = append(head, sum[:]...)
	head = binary.BigEndian.AppendUint64(head, uint64(payload.Len()))
	dir := s.opts.SnapshotDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+s.category+"-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone once renamed
	_, err = f.Write(head)
	if err == nil {
		_, err = f.Write(payload.Bytes())
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	path := s.snapshotPath(key)
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// The source's snapshots of other documents, configurations or
	// versions will not be read again, nor will the temporary files of
	// writes that stopped half-way (those of a write in progress, by
	// another codecell on the same directory, are recent).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		switch {
		case s.ownSnapshot(name) && name != filepath.Base(path):
			os.Remove(filepath.Join(dir, name))
		case s.ownTemp(name):
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
	return nil
}
