package engine

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
)

// ParseJSON errors. A SyntaxError says where the text stops being JSON.
var (
	// ErrNoMemory: the heap limit was reached while building the value.
	ErrNoMemory = errors.New("engine: out of memory")
	// ErrTooDeep: the value nests more than MaxJSONDepth arrays and
	// objects.
	ErrTooDeep = errors.New("engine: JSON nested too deep")
)

// MaxJSONDepth bounds how deep ParseJSON follows arrays and objects.
const MaxJSONDepth = 10000

// SyntaxError is JSON text that is not JSON.
type SyntaxError struct {
	Offset int // of the first byte that does not fit
}

func (e *SyntaxError) Error() string {
	return "engine: not JSON at byte " + strconv.Itoa(e.Offset)
}

// ParseJSON builds in the VM the value of the JSON text data, as the
// engine's JSON.parse would: the same objects (the intrinsic
// Object.prototype, own data properties in order, a later duplicate key
// replacing the earlier), arrays, strings and numbers, a lone surrogate
// escaped in a string kept as that code unit, and each byte of invalid
// UTF-8 read as U+FFFD. No code of the program runs: properties are
// defined, never set. It is about twice as fast as JSON.parse: strings
// without escapes are copied once, straight from the text, and a key is
// made an atom once per call rather than once per object.
func (vm *VM) ParseJSON(data []byte) (v Value, err error) {
	return vm.parseJSON(&jsonParser{vm: vm, data: data})
}

func (vm *VM) parseJSON(p *jsonParser) (v Value, err error) {
	defer vm.guard()
	data := p.data
	if len(data) > 0 {
		p.c = libc.Xmalloc(vm.tls, lib.Tsize_t(len(data)))
		if p.c == 0 {
			return Undefined, ErrNoMemory
		}
		defer libc.Xfree(vm.tls, p.c)
		copy(unsafe.Slice((*byte)(ptr(p.c)), len(data)), data)
	}
	defer p.freeAtoms()
	defer p.freeWitnesses()
	// Everything built is kept, so the engine's cycle collector, which
	// it would run every time the heap grew by half, would find nothing
	// to free while walking it all: it waits until the value is built,
	// and then until the heap grows by half again, as it would after a
	// collection, rather than walk the whole value at the program's next
	// allocation.
	rt := (*lib.TJSRuntime)(ptr(vm.rt))
	threshold := rt.Fmalloc_gc_threshold
	rt.Fmalloc_gc_threshold = ^lib.Tsize_t(0)
	defer func() {
		size := rt.Fmalloc_ctx.Fmalloc_state.Fmalloc_size
		rt.Fmalloc_gc_threshold = max(threshold, size+size>>1)
	}()
	v, ok := p.value(0)
	if ok {
		p.space()
		if p.pos < len(data) {
			vm.Free(v)
			ok = false
			p.fail(&SyntaxError{Offset: p.pos})
		}
	}
	if !ok {
		if lib.XJS_HasException(vm.tls, vm.ctx) != 0 {
			vm.Free(lib.XJS_GetException(vm.tls, vm.ctx))
		}
		return Undefined, p.err
	}
	return v, nil
}

type jsonParser struct {
	vm   *VM
	data []byte
	c    uintptr // data in C memory, for strings copied from it as they are
	pos  int
	err  error
	// atoms are the keys made atoms so far; buf holds a string with
	// escapes while it is decoded.
	atoms map[string]lib.TJSAtom
	buf   []byte
	// The key sequences of the objects built so far (see shapeNode).
	root      shapeNode
	kids      map[shapeEdge]*shapeNode
	nodes     int
	witnesses []Value
	defines   int // properties defined on the result's objects
	witnessed int // properties defined on witnesses
}

// The engine gives an object a shape (its keys and their attributes, in
// order), shared between objects through a hash of shapes found by the
// shape an object has and the key it gets next. A shape held by one object
// alone is changed in place when that object gets its next key, so
// building an object key by key leaves no shape behind for its prefixes:
// the next object with the same keys clones the empty shape, grows its own
// copy key by key (a resize and a rehash as it grows) and only at its last
// key finds the first object's whole shape, and frees its copy. JSON.parse
// does the same, for every row of a list. So once a sequence of keys
// repeats, each of its prefixes gets a witness, an object with those keys
// (values undefined) that holds the prefix's shape in the hash until the
// parse ends, and the objects built after it find a shape there at every
// key. The shapes the value ends with are those the engine makes anyway;
// only the work on the way differs (BenchmarkParseJSON: about a tenth
// less CPU). The same nodes predict each object's next key, which is
// then taken by comparing its text, without the atoms' map.
//
// A shapeNode is one prefix of the keys of the objects built so far.
type shapeNode struct {
	parent  *shapeNode
	key     string // the last key, as written (plain keys only)
	atom    lib.TJSAtom
	depth   int
	visits  int
	witness bool
	last    *shapeNode // the child taken last, the likely next key
}

type shapeEdge struct {
	from *shapeNode
	atom lib.TJSAtom
}

// Bounds of the shape ladder: prefixes of up to maxLadder keys, up to
// maxShapeNodes prefixes per parse, and witnesses that cost at most a
// quarter of the properties defined, beyond a start of ladderSlack.
const (
	maxLadder     = 32
	maxShapeNodes = 4096
	ladderSlack   = 1024
)

// step follows the object's key sequence from n to the key k (a cached
// atom) and makes the prefix's witness when the prefix repeats; nil when
// the sequence is not followed any further.
func (p *jsonParser) step(n *shapeNode, key []byte, atom lib.TJSAtom) *shapeNode {
	if n == nil || n.depth >= maxLadder {
		return nil
	}
	c := n.last
	if c == nil || c.atom != atom {
		c = p.kids[shapeEdge{n, atom}]
		if c == nil {
			if p.nodes >= maxShapeNodes {
				return nil
			}
			p.nodes++
			c = &shapeNode{parent: n, key: string(key), atom: atom, depth: n.depth + 1}
			if p.kids == nil {
				p.kids = map[shapeEdge]*shapeNode{}
			}
			p.kids[shapeEdge{n, atom}] = c
		}
		n.last = c
	}
	c.visits++
	if c.visits == 2 && !c.witness && p.witnessed+c.depth <= ladderSlack+p.defines/4 {
		p.witnessFor(c)
	}
	return c
}

// witnessFor makes the witness of the prefix c. A failure leaves none,
// which only costs speed.
func (p *jsonParser) witnessFor(c *shapeNode) {
	vm := p.vm
	var keys [maxLadder]lib.TJSAtom
	for n := c; n.parent != nil; n = n.parent {
		keys[n.depth-1] = n.atom
	}
	w := lib.XJS_NewObject(vm.tls, vm.ctx)
	if tagOf(w) == lib.EJS_TAG_EXCEPTION {
		return
	}
	for _, a := range keys[:c.depth] {
		if lib.XJS_DefinePropertyValue(vm.tls, vm.ctx, w, a, undefined, lib.MJS_PROP_C_W_E) < 0 {
			vm.Free(w)
			if lib.XJS_HasException(vm.tls, vm.ctx) != 0 {
				vm.Free(lib.XJS_GetException(vm.tls, vm.ctx))
			}
			return
		}
	}
	p.witnessed += c.depth
	c.witness = true
	p.witnesses = append(p.witnesses, w)
}

func (p *jsonParser) freeWitnesses() {
	for _, w := range p.witnesses {
		p.vm.Free(w)
	}
}

func (p *jsonParser) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

func (p *jsonParser) syntax() (Value, bool) {
	p.fail(&SyntaxError{Offset: p.pos})
	return Undefined, false
}

func (p *jsonParser) noMemory() (Value, bool) {
	p.fail(ErrNoMemory)
	return Undefined, false
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses the value at p.pos; false means p.err says why not.
func (p *jsonParser) value(depth int) (Value, bool) {
	p.space()
	if p.pos >= len(p.data) {
		return p.syntax()
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true", mkBool(true))
	case c == 'f':
		return p.literal("false", mkBool(false))
	case c == 'n':
		return p.literal("null", null)
	}
	return p.syntax()
}

func (p *jsonParser) literal(word string, v Value) (Value, bool) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.syntax()
	}
	p.pos += len(word)
	return v, true
}

func (p *jsonParser) object(depth int) (Value, bool) {
	if depth > MaxJSONDepth {
		p.fail(ErrTooDeep)
		return Undefined, false
	}
	vm := p.vm
	obj := lib.XJS_NewObject(vm.tls, vm.ctx)
	if tagOf(obj) == lib.EJS_TAG_EXCEPTION {
		return p.noMemory()
	}
	p.pos++ // {
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, true
	}
	shape := &p.root
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			vm.Free(obj)
			return p.syntax()
		}
		var hint *shapeNode
		if shape != nil {
			hint = shape.last
		}
		atom, key, cached, ok := p.key(hint)
		if !ok {
			vm.Free(obj)
			return Undefined, false
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			p.dropAtom(atom, cached)
			vm.Free(obj)
			return p.syntax()
		}
		p.pos++
		v, ok := p.value(depth)
		if !ok {
			p.dropAtom(atom, cached)
			vm.Free(obj)
			return Undefined, false
		}
		if shape != nil {
			if cached {
				shape = p.step(shape, key, atom)
			} else {
				shape = nil
			}
		}
		p.defines++
		// Takes v, also when it fails.
		r := lib.XJS_DefinePropertyValue(vm.tls, vm.ctx, obj, atom, v, lib.MJS_PROP_C_W_E)
		p.dropAtom(atom, cached)
		if r < 0 {
			vm.Free(obj)
			return p.noMemory()
		}
		p.space()
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case ',':
				p.pos++
				continue
			case '}':
				p.pos++
				return obj, true
			}
		}
		vm.Free(obj)
		return p.syntax()
	}
}

func (p *jsonParser) array(depth int) (Value, bool) {
	if depth > MaxJSONDepth {
		p.fail(ErrTooDeep)
		return Undefined, false
	}
	vm := p.vm
	arr := lib.XJS_NewArray(vm.tls, vm.ctx)
	if tagOf(arr) == lib.EJS_TAG_EXCEPTION {
		return p.noMemory()
	}
	p.pos++ // [
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, true
	}
	for i := uint32(0); ; i++ {
		v, ok := p.value(depth)
		if !ok {
			vm.Free(arr)
			return Undefined, false
		}
		// Appending to a fast array; takes v, also when it fails.
		if lib.XJS_DefinePropertyValueUint32(vm.tls, vm.ctx, arr, i, v, lib.MJS_PROP_C_W_E) < 0 {
			vm.Free(arr)
			return p.noMemory()
		}
		p.space()
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case ',':
				p.pos++
				continue
			case ']':
				p.pos++
				return arr, true
			}
		}
		vm.Free(arr)
		return p.syntax()
	}
}

// maxCachedKey bounds the keys kept as atoms for the whole call: longer
// ones are rarely repeated.
const maxCachedKey = 64

// key parses an object key and returns its atom and its text as written;
// cached says the parser keeps the atom, else the caller frees it with
// dropAtom. hint, when set, is the key that came next last time.
func (p *jsonParser) key(hint *shapeNode) (lib.TJSAtom, []byte, bool, bool) {
	start, end, plain, ok := p.scanString()
	if !ok {
		return 0, nil, false, false
	}
	raw := p.data[start:end]
	if plain && len(raw) <= maxCachedKey {
		k := unsafe.String(unsafe.SliceData(raw), len(raw))
		if hint != nil && hint.key == k {
			return hint.atom, raw, true, true
		}
		if a, ok := p.atoms[k]; ok {
			return a, raw, true, true
		}
	}
	s, n := p.c+uintptr(start), len(raw)
	if !plain {
		if s, n, ok = p.decoded(start, end); !ok {
			return 0, nil, false, false
		}
	}
	vm := p.vm
	a := lib.XJS_NewAtomLen(vm.tls, vm.ctx, s, lib.Tsize_t(n))
	if a == lib.MJS_ATOM_NULL {
		p.fail(ErrNoMemory)
		return 0, nil, false, false
	}
	if !plain || len(raw) > maxCachedKey {
		return a, raw, false, true
	}
	if p.atoms == nil {
		p.atoms = map[string]lib.TJSAtom{}
	}
	p.atoms[string(raw)] = a
	return a, raw, true, true
}

func (p *jsonParser) dropAtom(a lib.TJSAtom, cached bool) {
	if !cached {
		lib.XJS_FreeAtom(p.vm.tls, p.vm.ctx, a)
	}
}

func (p *jsonParser) freeAtoms() {
	for _, a := range p.atoms {
		lib.XJS_FreeAtom(p.vm.tls, p.vm.ctx, a)
	}
}

func (p *jsonParser) str() (Value, bool) {
	start, end, plain, ok := p.scanString()
	if !ok {
		return Undefined, false
	}
	s, n := p.c+uintptr(start), end-start
	if !plain {
		if s, n, ok = p.decoded(start, end); !ok {
			return Undefined, false
		}
	}
	vm := p.vm
	v := lib.XJS_NewStringLen(vm.tls, vm.ctx, s, lib.Tsize_t(n))
	if tagOf(v) == lib.EJS_TAG_EXCEPTION {
		return p.noMemory()
	}
	return v, true
}

// scanString finds the string at p.pos: its contents are data[start:end],
// and plain says they are valid UTF-8 without escapes, to be used as
// they are. p.pos moves past the closing quote.
func (p *jsonParser) scanString() (start, end int, plain, ok bool) {
	d := p.data
	i := p.pos + 1
	start = i
	escaped, high := false, false
	for {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control character; bytes of 0x80 and more are noted.
		for i+8 <= len(d) {
			w := binary.LittleEndian.Uint64(d[i:])
			q := w ^ ('"' * ones)
			b := w ^ ('\\' * ones)
			m := (((q - ones) &^ q) | ((b - ones) &^ b) | ((w - 0x20*ones) &^ w)) & highs
			if m == 0 {
				high = high || w&highs != 0
				i += 8
				continue
			}
			k := bits.TrailingZeros64(m) // the first such byte's top bit
			high = high || w&highs&(1<<k-1) != 0
			i += k / 8
			break
		}
		if i >= len(d) {
			p.pos = i
			p.syntax()
			return 0, 0, false, false
		}
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			plain = !escaped && (!high || utf8.Valid(d[start:i]))
			return start, i, plain, true
		case c == '\\':
			escaped = true
			i += 2
			continue
		case c < 0x20:
			p.pos = i
			p.syntax()
			return 0, 0, false, false
		case c >= 0x80:
			high = true
		}
		i++
	}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// decoded decodes the contents of a string with escapes, or with invalid
// UTF-8, into the VM's C buffer and returns where and how long.
func (p *jsonParser) decoded(start, end int) (uintptr, int, bool) {
	d := p.data[start:end]
	b := p.buf[:0]
	for i := 0; i < len(d); {
		c := d[i]
		switch {
		case c == '\\':
			var ok bool
			b, i, ok = p.escape(b, d, i)
			if !ok {
				p.pos = start + i
				p.syntax()
				return 0, 0, false
			}
		case c < 0x80:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRune(d[i:]) // an invalid byte: RuneError, 1
			b = utf8.AppendRune(b, r)
			i += n
		}
	}
	p.buf = b
	s := p.vm.scratch(len(b))
	copy(unsafe.Slice((*byte)(ptr(s)), len(b)), b)
	return s, len(b), true
}

// escape appends what the escape at d[i] stands for and returns the index
// after it.
func (p *jsonParser) escape(b, d []byte, i int) ([]byte, int, bool) {
	if i+1 >= len(d) {
		return b, i, false
	}
	switch d[i+1] {
	case '"', '\\', '/':
		return append(b, d[i+1]), i + 2, true
	case 'b':
		return append(b, '\b'), i + 2, true
	case 'f':
		return append(b, '\f'), i + 2, true
	case 'n':
		return append(b, '\n'), i + 2, true
	case 'r':
		return append(b, '\r'), i + 2, true
	case 't':
		return append(b, '\t'), i + 2, true
	case 'u':
		r, ok := hex4(d, i+2)
		if !ok {
			return b, i, false
		}
		i += 6
		if r >= 0xd800 && r < 0xdc00 && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
			if lo, ok := hex4(d, i+2); ok && lo >= 0xdc00 && lo < 0xe000 {
				return utf8.AppendRune(b, 0x10000+(r-0xd800)<<10+(lo-0xdc00)), i + 6, true
			}
		}
		if r >= 0xd800 && r < 0xe000 {
			// A lone surrogate: the three bytes of its code point, which
			// the engine reads as that code unit (Go's encoder would
			// write U+FFFD).
			return append(b, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f), i, true
		}
		return utf8.AppendRune(b, r), i, true
	}
	return b, i, false
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number parses a JSON number: an integer that fits in 31 bits and is
// not -0 becomes an int, as the engine makes it, anything else a float.
func (p *jsonParser) number() (Value, bool) {
	d := p.data
	start, i := p.pos, p.pos
	neg := d[i] == '-'
	if neg {
		i++
	}
	if i >= len(d) {
		p.pos = i
		return p.syntax()
	}
	intStart := i
	switch {
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return p.syntax()
	}
	intEnd := i
	frac := false
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return p.syntax()
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		frac = true
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return p.syntax()
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		frac = true
	}
	p.pos = i
	if !frac && intEnd-intStart <= 9 {
		n := int32(0)
		for _, c := range d[intStart:intEnd] {
			n = n*10 + int32(c-'0')
		}
		if neg {
			if n == 0 {
				return mkFloat(negZero), true
			}
			n = -n
		}
		return mkInt32(n), true
	}
	f, err := strconv.ParseFloat(unsafe.String(&d[start], i-start), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return p.syntax()
	}
	if f >= math.MinInt32 && f <= math.MaxInt32 && f == math.Trunc(f) && (f != 0 || !neg) {
		return mkInt32(int32(f)), true
	}
	return mkFloat(f), true
}

var negZero = func() float64 { z := 0.0; return -z }()
