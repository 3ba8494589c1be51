package vfs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

func nopHandler(context.Context, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// checkTS fails when esbuild's TypeScript loader rejects src.
func checkTS(tb testing.TB, name, src string) {
	tb.Helper()
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS, Sourcefile: name})
	for _, m := range res.Errors {
		loc := ""
		if m.Location != nil {
			loc = fmt.Sprintf("%d:%d: %q: ", m.Location.Line, m.Location.Column, m.Location.LineText)
		}
		tb.Errorf("%s: %s%s\n%s", name, loc, m.Text, src)
	}
}

// TestDeclarationsAreValidTypeScript runs every .d.ts of the testdata
// catalogue through esbuild, and checks each declares the call the
// sandbox accepts: arguments built from the schema validate, and every
// required property is declared non-optional.
func TestDeclarationsAreValidTypeScript(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	f := newFS(t, r)
	for _, tl := range r.List() {
		p := vfs.SignaturePath(tl.Name)
		src, err := f.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkTS(t, p, string(src))
		d := string(src)

		args := sampleArgs(t, tl)
		if err := r.Validate(tl.Name, args); err != nil {
			t.Errorf("%s: arguments built from the schema do not validate: %v\nargs: %s", tl.Name, err, args)
		}
		if out, err := r.Call(t.Context(), tl.Name, args); err != nil || !json.Valid(out) {
			t.Errorf("%s: call with sample arguments: %v", tl.Name, err)
		}

		argsType := vfsArgsName(tl)
		body := declBody(d, argsType)
		var schema struct {
			Required []string `json:"required"`
		}
		_ = json.Unmarshal(tl.InputSchema, &schema)
		if body == "" && (len(schema.Required) > 0 || !strings.Contains(d, "  type "+argsType+" = ")) {
			t.Errorf("%s: no declaration of %s:\n%s", tl.Name, argsType, d)
			continue
		}
		for _, req := range schema.Required {
			re := regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(req) + `: `)
			if !re.MatchString(body) {
				t.Errorf("%s: required property %q is not declared non-optional in %s:\n%s", tl.Name, req, argsType, body)
			}
		}
		call := fmt.Sprintf("function %s(args%s: %s)", tl.ShortName(), map[bool]string{true: "?", false: ""}[len(schema.Required) == 0], argsType)
		if !strings.Contains(d, call) {
			t.Errorf("%s: no %q in\n%s", tl.Name, call, d)
		}
		if len(tl.Positional) > 0 {
			re := regexp.MustCompile(`function ` + tl.ShortName() + `\(` + strings.Join(tl.Positional, `\??: [^,]+, `) + `\??: `)
			if !re.MatchString(d) {
				t.Errorf("%s: no positional overload (%v) in\n%s", tl.Name, tl.Positional, d)
			}
		}
		if !strings.HasPrefix(d, "declare namespace "+tl.Category()+" {\n") {
			t.Errorf("%s: declaration does not open namespace %s", tl.Name, tl.Category())
		}
	}
}

func vfsArgsName(t *tools.Tool) string {
	var b strings.Builder
	for _, part := range strings.Split(t.ShortName(), "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Args"
}

// declBody returns the text of "interface name {...}" in d.
func declBody(d, name string) string {
	start := strings.Index(d, "  interface "+name+" {\n")
	if start < 0 {
		return ""
	}
	end := strings.Index(d[start:], "\n  }\n")
	if end < 0 {
		return ""
	}
	return d[start : start+end]
}

// sampleArgs builds arguments with every required property, each with a
// representative value that satisfies the property's schema.
func sampleArgs(tb testing.TB, t *tools.Tool) json.RawMessage {
	tb.Helper()
	var root any
	if err := json.Unmarshal(t.InputSchema, &root); err != nil {
		tb.Fatal(err)
	}
	v, err := sample(root, root, 0)
	if err != nil {
		tb.Fatalf("%s: %v", t.Name, err)
	}
	out, _ := json.Marshal(v)
	return out
}

func sample(root, s any, depth int) (any, error) {
	if depth > 20 {
		return nil, fmt.Errorf("schema too deep")
	}
	m, ok := s.(map[string]any)
	if !ok {
		return nil, nil
	}
	if ref, ok := m["$ref"].(string); ok {
		target := root
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			target = target.(map[string]any)[tok]
		}
		return sample(root, target, depth+1)
	}
	if c, ok := m["const"]; ok {
		return c, nil
	}
	if e, ok := m["enum"].([]any); ok {
		return e[0], nil
	}
	if ex, ok := m["examples"].([]any); ok {
		return ex[0], nil
	}
	if all, ok := m["allOf"].([]any); ok {
		merged := map[string]any{}
		for _, a := range all {
			v, err := sample(root, a, depth+1)
			if err != nil {
				return nil, err
			}
			if vm, ok := v.(map[string]any); ok {
				for k, x := range vm {
					merged[k] = x
				}
			}
		}
		return merged, nil
	}
	required := map[string]bool{}
	for _, r := range asStrings(m["required"]) {
		required[r] = true
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		bs, ok := m[k].([]any)
		if !ok || len(bs) == 0 {
			continue
		}
		b := bs[0].(map[string]any)
		if _, shaped := b["type"]; shaped || b["properties"] != nil || b["$ref"] != nil || b["const"] != nil {
			return sample(root, b, depth+1)
		}
		for _, r := range asStrings(b["required"]) {
			required[r] = true
		}
	}
	typ := m["type"]
	if ts, ok := typ.([]any); ok {
		typ = ts[0]
	}
	if typ == nil && m["properties"] != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		for name := range required {
			v, err := sample(root, props[name], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = v
		}
		return out, nil
	case "array":
		n := 0
		if mi, ok := m["minItems"].(float64); ok {
			n = int(mi)
		}
		out := []any{}
		for range n {
			v, err := sample(root, m["items"], depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case "string":
		return sampleString(m)
	case "integer", "number":
		if mi, ok := m["minimum"].(float64); ok {
			return mi, nil
		}
		if ma, ok := m["maximum"].(float64); ok && ma < 1 {
			return ma, nil
		}
		return 1, nil
	case "boolean":
		return true, nil
	case "null":
		return nil, nil
	}
	return "x", nil
}

var formatSamples = map[string]string{
	"date-time": "2024-05-07T12:00:00Z",
	"date":      "2024-05-07",
	"email":     "someone@example.com",
	"uri":       "https://example.com/a",
	"hostname":  "example.com",
	"uuid":      "123e4567-e89b-12d3-a456-426614174000",
}

var stringCandidates = []string{
	"x", "abc", "OPS", "OPS-142", "cus_123", "ch_123", "in_123", "sub_123", "price_123", "usd", "USD", "SE", "en",
	"U024BE7LH", "1715090400.123400", "d73a4a", "3f9a1c0e2b4d6f8a0c2e4a6b8d0f1a3c5e7b9d1f", "2h 30m",
	"RRULE:FREQ=WEEKLY", "https://example.com", "exports/a.csv", "/a/b", "white_check_mark", "general", "public.tenants",
}

func sampleString(m map[string]any) (any, error) {
	cands := stringCandidates
	if f, ok := m["format"].(string); ok && formatSamples[f] != "" {
		cands = append([]string{formatSamples[f]}, cands...)
	}
	minLen, _ := m["minLength"].(float64)
	maxLen, hasMax := m["maxLength"].(float64)
	var re *regexp.Regexp
	if p, ok := m["pattern"].(string); ok {
		var err error
		if re, err = regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	for _, c := range cands {
		if len(c) < int(minLen) || (hasMax && len(c) > int(maxLen)) {
			continue
		}
		if re != nil && !re.MatchString(c) {
			continue
		}
		return c, nil
	}
	return nil, fmt.Errorf("no sample string fits %v", m)
}

func asStrings(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestDeclarationShapes checks the generator on schemas the catalogue does
// not exercise, and that each result is valid TypeScript.
func TestDeclarationShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		tool       tools.Tool
		want       []string
		wantAbsent []string
	}{
		{
			name: "no output schema and no args",
			tool: tools.Tool{Name: "util.now", Summary: "Now."},
			want: []string{"function now(args?: NowArgs): Promise<unknown>;", "type NowArgs = Record<string, never>;"},
		},
		{
			name: "quoted names, nullable, index signatures, tuples",
			tool: tools.Tool{Name: "x.odd", Summary: "Odd.", InputSchema: json.RawMessage(`{"type":"object","properties":{
				"content-type":{"type":"string"},
				"2fa":{"type":["integer","null"]},
				"tags":{"type":"object","additionalProperties":{"type":"string"}},
				"point":{"type":"array","prefixItems":[{"type":"number"},{"type":"number"}],"items":false},
				"mixed":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"number"}},
				"pp":{"type":"object","patternProperties":{"^x-":{"type":"string"}}},
				"any":{},
				"never":false,
				"old":{"type":"string","deprecated":true,"description":"Use new.\nIt ends */ here."}
			},"required":["content-type"]}`)},
			want: []string{`"content-type": string;`, `"2fa"?: number | null;`, `tags?: { [key: string]: string };`,
				`point?: [number, number];`, `{ [key: string]: number }`, `pp?: { [key: string]: string };`,
				`any?: unknown;`, `never?: never;`, `@deprecated`, `It ends *\/ here.`},
		},
		{
			name: "recursive definitions and root references",
			tool: tools.Tool{Name: "x.tree", Summary: "Tree.", InputSchema: json.RawMessage(`{"type":"object","properties":{
				"root":{"$ref":"#/$defs/Node"},
				"parent":{"$ref":"#"},
				"alias":{"$ref":"#/properties/root"}
			},"$defs":{"Node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/Node"}},"label":{"type":"string","minLength":1,"default":"n"}},"required":["label"]}}}`)},
			want: []string{"root?: Node;", "parent?: TreeArgs;", "alias?: Node;", "interface Node {", "children?: Node[];", "label: string;", `@default "n" @minLength 1`},
		},
		{
			name: "unions and intersections",
			tool: tools.Tool{Name: "x.u", Summary: "U.", InputSchema: json.RawMessage(`{"type":"object","properties":{
				"v":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]},
				"w":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"number"}}}]},
				"e":{"enum":["a",1,true,null]},
				"arr":{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"number"}]}}
			},"oneOf":[{"required":["v"]},{"required":["w"]}]}`),
				OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)},
			want: []string{"v?: string | string[];", "} & {", `e?: "a" | 1 | true | null;`, "arr?: (string | number)[];", "@remarks Give exactly one of: v; w.", "type UResult = string[];", "Promise<UResult>"},
		},
		{
			name: "reserved words and positional overload",
			tool: tools.Tool{Name: "files.delete", Summary: "Delete a file.", Positional: []string{"path", "new"},
				Annotations: tools.Annotations{Destructive: true, Idempotent: true},
				InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"new":{"type":"boolean"},"recursive":{"type":"boolean"}},"required":["path"]}`)},
			want: []string{"function delete_(args: DeleteArgs)", "function delete_(path: string, new_?: boolean)", `call it as files.delete(...)`, "Destructive: changes or deletes data. Idempotent.", "new?: boolean;"},
		},
		{
			name: "optional positional makes later ones optional",
			tool: tools.Tool{Name: "x.p", Summary: "P.", Positional: []string{"a", "b"},
				InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"]}`)},
			want: []string{"function p(a?: string, b?: string)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tool.Handler = nopHandler
			d, err := vfs.Declaration(&tt.tool)
			if err != nil {
				t.Fatal(err)
			}
			checkTS(t, tt.tool.Name, d)
			for _, w := range tt.want {
				if !strings.Contains(d, w) {
					t.Errorf("declaration lacks %q:\n%s", w, d)
				}
			}
		})
	}
}

func TestOutputShape(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	f := newFS(t, r)
	tests := map[string]string{
		"github.search_issues":       "{total_count: number, incomplete_results?: boolean, items: Issue[]}",
		"http.get_json":              "unknown",
		"github.get_file_contents":   "File | Directory",
		"slack.add_reaction":         "{ok: boolean}",
		"analytics.create_dashboard": "{id: string, url: string}",
	}
	for name, want := range tests {
		info, ok := f.Info(name)
		if !ok {
			t.Fatalf("no info for %s", name)
		}
		if info.Output != want {
			t.Errorf("%s: output shape %q, want %q", name, info.Output, want)
		}
		if info.Signature.Bytes == 0 || info.Full.Bytes <= info.Signature.Bytes || info.Signature.Tokens != (info.Signature.Bytes+3)/4 {
			t.Errorf("%s: costs %+v", name, info)
		}
	}
	if got := vfs.OutputShape(nil); got != "unknown" {
		t.Errorf("OutputShape(nil) = %q", got)
	}
	if info, _ := f.Info("github.get_issue"); !strings.HasPrefix(info.Output, "Issue {number: number, title: string") {
		t.Errorf("bare reference shape = %q", info.Output)
	}
}
