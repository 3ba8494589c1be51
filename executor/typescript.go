package executor

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// transform turns a program into JavaScript with esbuild, in this
// process, and returns a source map back to the program as written.
// Syntax errors come back as *Error with the line and column in the
// program. esbuild cannot be cancelled and some inputs take it minutes or
// gigabytes: the server calls it only inside a transform process
// (ServeTransform), which Executor.transform bounds and kills.
func transform(code string, loader api.Loader) (string, *sourceMap, *Error) {
	out := transformRaw(code, loader)
	if out.Err != nil {
		return "", nil, out.Err
	}
	return out.Code, out.sourceMap(), nil
}

// loaderOf returns esbuild's loader for a language.
func loaderOf(lang Language) (api.Loader, *Error) {
	switch lang {
	case "", JavaScript:
		return api.LoaderJS, nil
	case TypeScript:
		return api.LoaderTS, nil
	}
	return api.LoaderNone, &Error{Kind: KindInvalidRequest, Message: fmt.Sprintf("unknown language %q; use \"javascript\" or \"typescript\"", lang)}
}

// mainWrapper makes a program that uses both top-level await and
// top-level return acceptable to esbuild, which reads top-level await as
// the mark of a module and forbids return there. The wrapper takes a line
// of its own, above the program, and is removed from the output.
const mainWrapper = "async function __codecell_main__() {\n"

// transformed is what esbuild made of a program: the JavaScript, or the
// first syntax error, and the raw source map with the number of wrapper
// lines to take off its positions. It crosses from a transform process to
// the server as JSON.
type transformed struct {
	Code       string          `json:"code,omitempty"`
	Map        json.RawMessage `json:"map,omitempty"`
	LineOffset int             `json:"line_offset,omitempty"`
	Err        *Error          `json:"error,omitempty"`
}

func transformRaw(code string, loader api.Loader) transformed {
	out := esbuild(code, loader, 0)
	if out.Err != nil && strings.Contains(out.Err.Message, "Top-level return cannot be used") {
		wrapped := esbuild(mainWrapper+code+"\n}\n", loader, 1)
		if wrapped.Err != nil {
			return wrapped
		}
		body, ok := unwrapMain(wrapped.Code)
		if !ok {
			return out
		}
		wrapped.Code = body
		return wrapped
	}
	return out
}

// esbuild transforms src; lineOffset is the number of wrapper lines above
// the program, taken off the positions of errors (here) and of the source
// map (by sourceMap).
func esbuild(src string, loader api.Loader, lineOffset int) transformed {
	// esbuild loops forever quoting a source for its map that ends in a
	// truncated UTF-8 sequence; a program is text, and JSON-RPC would
	// have made its invalid bytes U+FFFD anyway.
	src = strings.ToValidUTF8(src, "\uFFFD")
	r := api.Transform(src, api.TransformOptions{
		Loader:     loader,
		Target:     api.ES2022, // keeps top-level await
		Sourcemap:  api.SourceMapExternal,
		Sourcefile: "program",
		Charset:    api.CharsetUTF8,
		LogLevel:   api.LogLevelSilent,
	})
	if len(r.Errors) > 0 {
		m := r.Errors[0]
		e := &Error{Kind: KindSyntax, Name: "SyntaxError", Message: "SyntaxError: " + m.Text}
		if m.Location != nil {
			e.Line = max(m.Location.Line-lineOffset, 1)
			e.Column = m.Location.Column + 1 // esbuild columns are 0-based
		}
		if n := len(r.Errors); n > 1 {
			e.Message += " (and " + pluralize(n-1, "more error") + ")"
		}
		return transformed{Err: e}
	}
	return transformed{Code: string(r.Code), Map: r.Map, LineOffset: lineOffset}
}

// sourceMap parses t's map and takes the wrapper's lines off it; nil
// means there is none, and positions point into the JavaScript.
func (t transformed) sourceMap() *sourceMap {
	sm, err := parseSourceMap(t.Map)
	if err != nil {
		return nil
	}
	if t.LineOffset > 0 {
		// The output loses the wrapper's first line; so does the map, and
		// its source lines lose the wrapper's.
		if len(sm.lines) > 0 {
			sm.lines = sm.lines[1:]
		}
		for _, segs := range sm.lines {
			for i := range segs {
				segs[i].srcLine -= t.LineOffset
			}
		}
	}
	return sm
}

// unwrapMain returns the body of the function mainWrapper declared, as
// esbuild printed it: everything between its first and its last line.
func unwrapMain(code string) (string, bool) {
	code = strings.TrimRight(code, "\n")
	first, rest, ok := strings.Cut(code, "\n")
	if !ok || !strings.HasPrefix(first, "async function __codecell_main__()") {
		return "", false
	}
	i := strings.LastIndex(rest, "\n")
	if i < 0 {
		return "", false
	}
	if strings.TrimSpace(rest[i:]) != "}" {
		return "", false
	}
	return rest[:i+1], true
}

func pluralize(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// sourceMap maps positions in generated code back to the source, from the
// "mappings" of a version 3 source map.
type sourceMap struct {
	// lines[generated line] holds that line's segments by generated column.
	lines [][]segment
}

type segment struct {
	genCol, srcLine, srcCol int // 0-based
}

func parseSourceMap(b []byte) (*sourceMap, error) {
	var doc struct {
		Mappings string `json:"mappings"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	sm := &sourceMap{}
	var srcIdx, srcLine, srcCol, name int
	for _, line := range strings.Split(doc.Mappings, ";") {
		var segs []segment
		genCol := 0
		for _, s := range strings.Split(line, ",") {
			if s == "" {
				continue
			}
			f, ok := decodeVLQ(s)
			if !ok || len(f) < 1 {
				return nil, errBadSourceMap
			}
			genCol += f[0]
			if len(f) >= 4 {
				srcIdx += f[1]
				srcLine += f[2]
				srcCol += f[3]
				if len(f) >= 5 {
					name += f[4]
				}
				segs = append(segs, segment{genCol: genCol, srcLine: srcLine, srcCol: srcCol})
			}
		}
		sm.lines = append(sm.lines, segs)
	}
	return sm, nil
}

// original maps a 1-based generated line and column to the 1-based source
// position, reporting false when the map has nothing for that line.
func (sm *sourceMap) original(line, col int) (int, int, bool) {
	if sm == nil || line < 1 || line > len(sm.lines) {
		return 0, 0, false
	}
	segs := sm.lines[line-1]
	if len(segs) == 0 {
		return 0, 0, false
	}
	best := segs[0]
	for _, s := range segs {
		if s.genCol > col-1 {
			break
		}
		best = s
	}
	return best.srcLine + 1, best.srcCol + 1, true
}

const vlqChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

var vlqValue = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(vlqChars); i++ {
		t[vlqChars[i]] = int8(i)
	}
	return t
}()

// decodeVLQ decodes the base64 VLQ fields of one source map segment.
func decodeVLQ(s string) ([]int, bool) {
	var out []int
	value, shift := 0, 0
	for i := 0; i < len(s); i++ {
		d := int(vlqValue[s[i]])
		if d < 0 || shift > 28 {
			return nil, false
		}
		value += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		if value&1 != 0 {
			out = append(out, -(value >> 1))
		} else {
			out = append(out, value>>1)
		}
		value, shift = 0, 0
	}
	return out, shift == 0
}

type sourceMapError string

func (e sourceMapError) Error() string { return string(e) }

const errBadSourceMap = sourceMapError("malformed source map")
