package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// extCall sends a request of the progressive disclosure extension with
// c's transport, as a client that adopted it would, and returns its
// result or error.
func extCall(t *testing.T, c *client.Client, method string, params map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
	t.Helper()
	h := http.Header{}
	if v := c.ProtocolVersion(); mcp.IsModernProtocol(v) {
		h.Set(mcp.HeaderMethod, method)
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": v,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "ext", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	}
	resp, err := c.GetTransport().SendRequest(t.Context(), transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(fmt.Sprintf("ext-%s", method)), Method: method, Params: params, Header: h})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp.Result, resp.Error
}

type catalogPage struct {
	Tools []struct {
		Name, Title, Summary, SchemaHash string
		Tags                             []string
		Annotations                      map[string]any
	}
	NextCursor string
	TTLMs      *int64
	CacheScope string
}

// wholeCatalog follows the catalog's pages.
func wholeCatalog(t *testing.T, c *client.Client, query string) catalogPage {
	t.Helper()
	var all catalogPage
	cursor := ""
	for range 20 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		if query != "" {
			params["query"] = query
		}
		raw, rerr := extCall(t, c, mcpserver.MethodToolsCatalog, params)
		if rerr != nil {
			t.Fatalf("tools/catalog: %+v", rerr)
		}
		var p catalogPage
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		all.Tools = append(all.Tools, p.Tools...)
		all.TTLMs, all.CacheScope = p.TTLMs, p.CacheScope
		if p.NextCursor == "" {
			return all
		}
		cursor = p.NextCursor
	}
	t.Fatal("tools/catalog did not end")
	return all
}

// canonicalHash is the draft's schemaHash, computed here from the wire:
// SHA-256 of the JSON with sorted keys and no spaces.
func canonicalHash(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// TestProgressiveDisclosureExtension: a client that adopts the
// experimental extension gets, over each transport and both protocol
// eras, a catalog of exactly the tools tools/list gives it — summaries,
// tags, annotations and the hash of each whole definition, in pages —,
// a query ranked by the catalogue's search, and whole definitions by
// name, byte for byte those of tools/list; a tool its toolset hides is
// unknown, as one that does not exist.
func TestProgressiveDisclosureExtension(t *testing.T) {
	access := engine.Access{Principals: map[string]engine.AccessRule{"reader": {ReadOnly: true}}}
	for _, tr := range accessTransports {
		for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
			if tr.name == "sse" && version == mcp.ProtocolVersion20260728 {
				continue // SSE speaks the protocols before 2026-07-28
			}
			t.Run(tr.name+" "+version, func(t *testing.T) {
				t.Parallel()
				srv, _ := accessServer(t, access)
				var extra []tools.Tool
				for i := range 120 {
					extra = append(extra, tools.Tool{Name: fmt.Sprintf("bulk.op_%03d", i), Summary: fmt.Sprintf("Bulk operation %d.", i),
						InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","minimum":1.50}}}`),
						Annotations: tools.Annotations{ReadOnly: i%2 == 0},
						Handler:     func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
				}
				if err := srv.Registry().Register(extra...); err != nil {
					t.Fatal(err)
				}
				token := "writer-token-0123456789"
				if tr.stdio {
					token = "" // stdio's principal is reader
				}
				c := tr.connect(t, srv, token)
				if err := c.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				init := mcp.InitializeRequest{}
				init.Params.ProtocolVersion = version
				init.Params.ClientInfo = mcp.Implementation{Name: "codecell-test", Version: "1"}
				ir, err := c.Initialize(t.Context(), init)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := ir.Capabilities.Extensions[mcpserver.ExtensionProgressiveDisclosure]; !ok {
					t.Fatalf("capabilities %+v do not advertise the extension", ir.Capabilities.Extensions)
				}

				lt, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				var listed []string
				for _, tl := range lt.Tools {
					listed = append(listed, tl.Name)
				}
				cat := wholeCatalog(t, c, "")
				var names []string
				for _, e := range cat.Tools {
					names = append(names, e.Name)
					if e.Summary == "" || e.SchemaHash == "" || len(e.Tags) == 0 {
						t.Errorf("entry %+v lacks a summary, hash or tags", e)
					}
				}
				if !slices.Equal(names, listed) {
					t.Fatalf("catalog %d tools, tools/list %d: they differ\n%v\n%v", len(names), len(listed), names, listed)
				}
				if reader := tr.stdio; reader && slices.Contains(names, "bulk__op_001") || !reader && !slices.Contains(names, "bulk__op_001") {
					t.Errorf("bulk__op_001 (not read-only) listed %v for the %s", slices.Contains(names, "bulk__op_001"), map[bool]string{true: "reader", false: "writer"}[reader])
				}
				if (cat.TTLMs != nil) != (version == mcp.ProtocolVersion20260728) {
					t.Errorf("ttlMs %v on protocol %s", cat.TTLMs, version)
				}

				// Describe returns tools/list's definitions, in the order
				// asked; their hashes are the catalog's.
				ask := []string{"bulk__op_002", "execute_code", "util__echo"}
				raw, rerr := extCall(t, c, mcpserver.MethodToolsDescribe, map[string]any{"names": ask})
				if rerr != nil {
					t.Fatalf("tools/describe: %+v", rerr)
				}
				var desc struct{ Tools []json.RawMessage }
				json.Unmarshal(raw, &desc)
				if len(desc.Tools) != len(ask) {
					t.Fatalf("described %d tools, want %d", len(desc.Tools), len(ask))
				}
				hashes := map[string]string{}
				for _, e := range cat.Tools {
					hashes[e.Name] = e.SchemaHash
				}
				// tools/list as it came, not as mcp-go's types re-encode it.
				rawList, lerr := extCall(t, c, string(mcp.MethodToolsList), map[string]any{})
				if lerr != nil {
					t.Fatal(lerr)
				}
				var listed2 struct{ Tools []json.RawMessage }
				json.Unmarshal(rawList, &listed2)
				fromList := map[string]json.RawMessage{}
				for _, raw := range listed2.Tools {
					var n struct{ Name string }
					json.Unmarshal(raw, &n)
					fromList[n.Name] = raw
				}
				for i, d := range desc.Tools {
					var tl mcp.Tool
					json.Unmarshal(d, &tl)
					if tl.Name != ask[i] {
						t.Errorf("tool %d is %s, want %s", i, tl.Name, ask[i])
					}
					if got := canonicalHash(t, d); got != hashes[tl.Name] {
						t.Errorf("%s: hash of its definition %s, catalog says %s", tl.Name, got, hashes[tl.Name])
					}
					if lb := fromList[tl.Name]; canonicalHash(t, lb) != canonicalHash(t, d) {
						t.Errorf("%s: described differently from tools/list:\n%s\n%s", tl.Name, d, lb)
					}
				}

				// A hidden or unknown name: one answer for both.
				_, rerr = extCall(t, c, mcpserver.MethodToolsDescribe, map[string]any{"names": []string{"util__echo", "no__such_tool", "bulk__op_001"}})
				want := []any{"no__such_tool"}
				if tr.stdio {
					want = append(want, "bulk__op_001")
				}
				if rerr == nil || rerr.Code != -32002 {
					t.Fatalf("describe of unknown names: %+v, want -32002", rerr)
				}
				var data struct{ UnknownNames []any }
				b, _ := json.Marshal(rerr.Data)
				json.Unmarshal(b, &data)
				if !slices.Equal(data.UnknownNames, want) {
					t.Errorf("unknownNames %v, want %v", data.UnknownNames, want)
				}

				// A query narrows to matching tools, best first.
				q := wholeCatalog(t, c, "echo text back")
				if len(q.Tools) == 0 || q.Tools[0].Name != "util__echo" || len(q.Tools) >= len(cat.Tools) {
					t.Errorf("query gave %d tools, first %+v", len(q.Tools), q.Tools)
				}
				for _, e := range q.Tools {
					if !slices.Contains(names, e.Name) {
						t.Errorf("query gave %s, not in the catalog", e.Name)
					}
				}
			})
		}
	}
}
