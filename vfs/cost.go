package vfs

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/codecell/codecell/tools"
)

// Cost is what reading a piece of the tree takes from a context window;
// tokens are estimated by tools.EstimateTokens.
type Cost = tools.Cost

// ToolInfo is what a search hit reports about a tool so an agent can
// budget before reading deeper: the cost of its signature (level 2) and
// full page (level 3), and the shape of its result.
type ToolInfo struct {
	Name      string `json:"name"`
	Signature Cost   `json:"signature"`
	Full      Cost   `json:"full"`
	// Output is a one-line shape of the result, such as
	// "{total_count: number, items: Issue[]}", followed by "(inferred)"
	// when it comes from the tool's inferred output schema.
	Output string `json:"output"`
}

// Info returns the ToolInfo of the named tool (qualified name).
func (f *FS) Info(name string) (ToolInfo, bool) {
	s := f.current()
	t := s.tools[name]
	if t == nil {
		return ToolInfo{}, false
	}
	return s.toolInfo(t), true
}

func (s *snapshot) toolInfo(t *tools.Tool) ToolInfo {
	c := s.byName[t.Category()]
	sig, full := node{kind: kindSignature, cat: c, tool: t}, node{kind: kindFull, cat: c, tool: t}
	sigPath, fullPath := SignaturePath(t.Name), FullPath(t.Name)
	if t.Runtime {
		sigPath, fullPath = s.signaturePath(t), runtimePath(t.Category(), FullExt)
		sig, full = s.lookup(sigPath), s.lookup(fullPath)
	}
	return ToolInfo{
		Name:      t.Name,
		Signature: tools.CostOf(len(s.content(sigPath, sig))),
		Full:      tools.CostOf(len(s.content(fullPath, full))),
		Output:    s.outputShape(t),
	}
}

func (s *snapshot) outputShape(t *tools.Tool) string {
	v, ok := s.shapes.Load(t.Name)
	if !ok {
		shape := OutputShape(t.OutputDocument())
		if len(t.OutputSchema) == 0 && t.InferredOutput != nil {
			shape = OutputShape(t.InferredOutput.Schema) + " (inferred)"
		}
		v, _ = s.shapes.LoadOrStore(t.Name, shape)
	}
	return v.(string)
}

// Level is a disclosure level of the tree.
type Level int

// The four disclosure levels.
const (
	LevelManifest  Level = iota // manifest.json
	LevelIndex                  // <category>/index.json
	LevelSignature              // <category>/<tool>.d.ts
	LevelFull                   // <category>/<tool>.md
)

// Content returns the named tool's file at LevelSignature or LevelFull
// (name is the qualified tool name), or at LevelIndex the index of the
// category that name names. The bytes are shared: do not modify them.
func (f *FS) Content(name string, level Level) ([]byte, bool) {
	_, data, ok := f.content(name, level)
	return data, ok
}

// content returns the path and content of Content's file. A runtime
// tool's files are its namespace's (see RuntimeDir).
func (f *FS) content(name string, level Level) (string, []byte, bool) {
	s := f.current()
	var p string
	switch level {
	case LevelManifest:
		p = ManifestFile
	case LevelIndex:
		p = IndexPath(name)
	case LevelSignature:
		p = SignaturePath(name)
	case LevelFull:
		p = FullPath(name)
	default:
		return "", nil, false
	}
	if t := s.tools[name]; t != nil && t.Runtime && level >= LevelSignature {
		p = s.signaturePath(t)
		if level == LevelFull {
			p = runtimePath(t.Category(), FullExt)
		}
	}
	if ns := s.builtinPage(name); ns != nil && level >= LevelSignature {
		p = runtimePath(ns.name, SignatureExt)
		if level == LevelFull {
			p = runtimePath(ns.name, FullExt)
		}
	}
	n := s.lookup(p)
	if n.kind == kindNone {
		return "", nil, false
	}
	return p, s.content(p, n), true
}

// signaturePath is the tree path of t's declaration: its namespace's
// under RuntimeDir for a runtime tool.
func (s *snapshot) signaturePath(t *tools.Tool) string {
	if t.Runtime {
		return runtimePath(t.Category(), SignatureExt)
	}
	return SignaturePath(t.Name)
}

// Signature returns the tree path and content of the named tool's
// declaration (level 2; name is qualified, or a built-in runtime page's,
// see Pages). The bytes are shared: do not modify them.
func (f *FS) Signature(name string) (path string, content []byte, ok bool) {
	return f.content(name, LevelSignature)
}

// Full returns the tree path and content of the named tool's full page
// (level 3). The bytes are shared: do not modify them.
func (f *FS) Full(name string) (path string, content []byte, ok bool) {
	return f.content(name, LevelFull)
}

// Output returns the one-line shape of the named tool's result (see
// OutputShape).
func (f *FS) Output(name string) (string, bool) {
	s := f.current()
	t := s.tools[name]
	if t == nil {
		return "", false
	}
	return s.outputShape(t), true
}

// SignaturePath returns the tree path of a tool's declaration (level 2).
func SignaturePath(name string) string { return toolPath(name, SignatureExt) }

// FullPath returns the tree path of a tool's full page (level 3).
func FullPath(name string) string { return toolPath(name, FullExt) }

// IndexPath returns the tree path of a category's index (level 1).
func IndexPath(category string) string { return category + "/" + IndexFile }

func toolPath(name, ext string) string {
	cat, short, _ := strings.Cut(name, ".")
	return cat + "/" + short + ext
}

// maxShape bounds OutputShape's length.
const maxShape = 120

// OutputShape summarizes a result schema in one line of TypeScript-like
// notation: top-level properties with their types, "?" for optional ones,
// named definitions by name and nested objects as {…}. A bare reference
// is shown as its name followed by the shape of its definition. No schema
// gives "unknown".
func OutputShape(schema json.RawMessage) string {
	if len(schema) == 0 {
		return "unknown"
	}
	root, err := parseJSON(schema)
	if err != nil {
		return "unknown"
	}
	d := &schemaDoc{root: root, visiting: map[string]bool{}}
	out := shapeOf(d, root, 0)
	if o, ok := root.(*object); ok && isBareRef(root) {
		if target, ok := resolvePointer(root, strings.TrimPrefix(o.str("$ref"), "#")); ok {
			out += " " + shapeOf(d, target, 0)
		}
	}
	if len(out) > maxShape {
		out = shorten(out, maxShape)
	}
	return out
}

func shapeOf(d *schemaDoc, s any, depth int) string {
	o, ok := s.(*object)
	if !ok {
		return "unknown"
	}
	if ref := o.str("$ref"); ref != "" {
		if i := strings.LastIndexByte(ref, '/'); i >= 0 && strings.HasPrefix(ref, "#/") {
			return pascal(unescapePointer(ref[i+1:]))
		}
		return "unknown"
	}
	if c, ok := o.get("const"); ok {
		return literal(c)
	}
	if e, ok := o.vals["enum"].([]any); ok && len(e) > 0 {
		if len(e) > 3 {
			return "enum"
		}
		lits := make([]string, len(e))
		for i, v := range e {
			lits[i] = literal(v)
		}
		return strings.Join(lits, "|")
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if bs, ok := o.vals[k].([]any); ok && len(bs) > 0 && hasShapedBranches(o, k) {
			var alts []string
			for _, b := range bs {
				if !shaped(b) {
					continue
				}
				if bo, ok := b.(*object); ok && bo.str("title") != "" {
					alts = append(alts, bo.str("title"))
					continue
				}
				alts = append(alts, shapeOf(d, b, depth))
			}
			return strings.Join(dedupe(alts), " | ")
		}
	}
	if all, ok := o.vals["allOf"].([]any); ok && len(all) > 0 {
		var parts []string
		for _, a := range all {
			parts = append(parts, shapeOf(d, a, depth))
		}
		return strings.Join(parts, " & ")
	}
	var types []string
	switch t := o.vals["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	case nil:
		if o.has("properties") {
			types = []string{"object"}
		} else if o.has("items") {
			types = []string{"array"}
		}
	}
	var out []string
	for _, t := range types {
		switch t {
		case "integer":
			out = append(out, "number")
		case "array":
			it := "unknown"
			if items, ok := o.vals["items"]; ok {
				it = shapeOf(d, items, depth+1)
			}
			if compound(it, '|') || compound(it, '&') {
				it = "(" + it + ")"
			}
			out = append(out, it+"[]")
		case "object":
			props, _ := o.vals["properties"].(*object)
			if props == nil || len(props.keys) == 0 {
				out = append(out, "object")
				continue
			}
			if depth > 0 {
				out = append(out, "{…}")
				continue
			}
			req := map[string]bool{}
			for _, r := range requiredOf(o) {
				req[r] = true
			}
			fields := make([]string, 0, len(props.keys))
			for _, k := range props.keys {
				opt := "?"
				if req[k] {
					opt = ""
				}
				fields = append(fields, propName(k)+opt+": "+shapeOf(d, props.vals[k], depth+1))
			}
			out = append(out, "{"+strings.Join(fields, ", ")+"}")
		default:
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return "unknown"
	}
	return strings.Join(out, " | ")
}

// Stats measures the tree: bytes (and estimated tokens) per disclosure
// level, the bytes an agent reads to reach one tool's signature, and what
// the same catalogue costs as an MCP tools/list in direct mode.
type Stats struct {
	Tools      int
	Categories int
	Manifest   Cost
	Indexes    []IndexStat
	Index      Spread // over the categories' index.json files
	Signature  Spread // over the tools' .d.ts files
	Full       Spread // over the tools' .md files
	// Path is manifest + the category's index (and, in a grouped
	// category, the indexes of the tool's groups) + the tool's .d.ts,
	// over the tools: what an agent reads from nothing to a signature.
	Path Spread
	// Direct is the size of a tools/list result carrying every tool with
	// its name, summary and description, input and output schemas and
	// annotations, as direct mode would expose them.
	Direct Cost
}

// IndexStat is the size of one category's index.json, or of one group's
// in a grouped category.
type IndexStat struct {
	// Category is the directory: the category, or for a group its path
	// such as github/repos.
	Category string
	Tools    int
	Cost
}

// Spread summarizes sizes in bytes over a set of files.
type Spread struct {
	Count, Total, Min, Median, P90, Max int
}

func spread(sizes []int) Spread {
	if len(sizes) == 0 {
		return Spread{}
	}
	s := append([]int(nil), sizes...)
	sort.Ints(s)
	total := 0
	for _, v := range s {
		total += v
	}
	return Spread{Count: len(s), Total: total, Min: s[0], Median: s[len(s)/2], P90: s[len(s)*9/10], Max: s[len(s)-1]}
}

// Stats renders every file of the tree and measures it.
func (f *FS) Stats() Stats {
	s := f.current()
	st := Stats{Categories: len(s.cats)}
	manifest := len(s.content(ManifestFile, node{kind: kindManifest}))
	st.Manifest = tools.CostOf(manifest)
	var idx, sig, full, paths []int
	type directTool struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
		Annotations  map[string]bool `json:"annotations,omitempty"`
	}
	var direct []directTool
	for _, c := range s.cats {
		n := len(s.content(IndexPath(c.name), node{kind: kindIndex, cat: c, grp: c.root}))
		st.Indexes = append(st.Indexes, IndexStat{Category: c.name, Tools: len(c.tools), Cost: tools.CostOf(n)})
		idx = append(idx, n)
		groupSize := map[string]int{} // group path → its index's size
		if c.root != nil {
			for _, g := range c.groupIndexes()[1:] {
				dir := c.groupDir(g)
				gn := len(s.content(dir+"/"+IndexFile, node{kind: kindIndex, cat: c, grp: g}))
				st.Indexes = append(st.Indexes, IndexStat{Category: dir, Tools: g.total, Cost: tools.CostOf(gn)})
				idx = append(idx, gn)
				groupSize[g.path] = gn
			}
		}
		for _, t := range c.tools {
			info := s.toolInfo(t)
			sig = append(sig, info.Signature.Bytes)
			full = append(full, info.Full.Bytes)
			// In a grouped category, the way to a tool passes its groups' indexes.
			way := manifest + n + info.Signature.Bytes
			if gp := c.groupOf[t]; c.root != nil && gp != "" {
				parts := strings.Split(gp, "/")
				for i := range parts {
					way += groupSize[strings.Join(parts[:i+1], "/")]
				}
			}
			paths = append(paths, way)
			st.Tools++
			dt := directTool{Name: t.Name, Description: strings.TrimSpace(t.Summary + "\n\n" + t.Description), InputSchema: t.InputDocument(), OutputSchema: t.OutputDocument()}
			a := map[string]bool{}
			if t.Annotations.ReadOnly {
				a["readOnlyHint"] = true
			}
			if t.Annotations.Destructive {
				a["destructiveHint"] = true
			}
			if t.Annotations.Idempotent {
				a["idempotentHint"] = true
			}
			if t.Annotations.OpenWorld {
				a["openWorldHint"] = true
			}
			if len(a) > 0 {
				dt.Annotations = a
			}
			if len(dt.InputSchema) == 0 {
				dt.InputSchema = json.RawMessage(`{"type":"object"}`)
			}
			direct = append(direct, dt)
		}
	}
	st.Index, st.Signature, st.Full, st.Path = spread(idx), spread(sig), spread(full), spread(paths)
	if b, err := json.Marshal(map[string]any{"tools": direct}); err == nil {
		st.Direct = tools.CostOf(len(b))
	}
	return st
}

// WriteTable writes the measurements as Markdown tables, the form the
// README's disclosure table takes.
func (st Stats) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Catalogue: %d tools in %d categories. Sizes in bytes; tokens estimated as bytes/4.\n\n", st.Tools, st.Categories)
	b.WriteString("| level | files | min | median | p90 | max | total | ~tokens (median) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, s Spread) {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", name, s.Count, s.Min, s.Median, s.P90, s.Max, s.Total, tools.EstimateTokens(s.Median))
	}
	row("0 manifest.json", spread([]int{st.Manifest.Bytes}))
	row("1 <category>/index.json", st.Index)
	row("2 <category>/<tool>.d.ts", st.Signature)
	row("3 <category>/<tool>.md", st.Full)
	row("manifest → index → signature", st.Path)
	fmt.Fprintf(&b, "\nDirect mode (every tool with its schemas in tools/list): %d bytes, ~%d tokens.\n", st.Direct.Bytes, st.Direct.Tokens)
	if st.Direct.Bytes > 0 && st.Path.Count > 0 {
		fmt.Fprintf(&b, "Reaching one signature reads %.1f%% of that (median), %.1f%% at most.\n",
			100*float64(st.Path.Median)/float64(st.Direct.Bytes), 100*float64(st.Path.Max)/float64(st.Direct.Bytes))
	}
	b.WriteString("\n| category | tools | index.json bytes | ~tokens |\n|---|---:|---:|---:|\n")
	for _, ix := range st.Indexes {
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", ix.Category, ix.Tools, ix.Bytes, ix.Tokens)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
