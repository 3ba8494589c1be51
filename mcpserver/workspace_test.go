package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// growingStore is a store whose workspace files are rewritten by grow
// just before their first read.
type growingStore struct {
	*sqlite.Store
	once *sync.Once
	grow func(ctx context.Context, path string)
}

func (s growingStore) ReadFile(ctx context.Context, p string) (memory.FileInfo, []byte, error) {
	s.once.Do(func() { s.grow(ctx, p) })
	return s.Store.ReadFile(ctx, p)
}

// TestWorkspaceReadsHeldAsRead (attack17 K2): a workspace file read as a
// resource is sized, then waits for its hold of six times that size, then
// is read — and may have grown meanwhile. What is made of it is held as
// what was read: a file that grew past what the principal may hold is
// refused naming the limit, one that grew within it is read whole, as it
// now is. 64 reads of a 1 MiB file that became 8 MiB while they waited
// grew the server by 900 MiB under holds of 6 MiB each.
func TestWorkspaceReadsHeldAsRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		grownTo int
		refused bool
	}{
		{"past the principal's share", 2 << 20, true}, // six times 2 MiB, more than 6 MiB
		{"within the principal's share", 256 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			reg := tools.NewRegistry()
			if err := builtin.Register(reg); err != nil {
				t.Fatal(err)
			}
			if err := st.Register(reg); err != nil {
				t.Fatal(err)
			}
			grown := bytes.Repeat([]byte{0xff}, tc.grownTo)
			store := growingStore{Store: st, once: &sync.Once{}, grow: func(ctx context.Context, p string) {
				if _, _, err := st.WriteFile(ctx, p, grown); err != nil {
					t.Errorf("grow %s: %v", p, err)
				}
			}}
			// A principal's share: three quarters of 8 MiB.
			srv, err := mcpserver.New(forTests(t, mcpserver.Config{Store: store, Limits: engine.Limits{ResultBytesInFlight: 8 << 20}}), reg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			c := start(t, transports[1].connect(t, srv))
			mustRun(t, c, `await workspace.write({path: "x.bin", data: "////".repeat(256), encoding: "base64"}); 1`)
			res, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: mcpserver.WorkspacePrefix + "x.bin"}})
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "limits.result_bytes_in_flight") {
					t.Fatalf("a file sized at 768 bytes read at %d: %v, want a refusal naming limits.result_bytes_in_flight", tc.grownTo, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a file sized at 768 bytes read at %d: %v", tc.grownTo, err)
			}
			b, ok := res.Contents[0].(mcp.BlobResourceContents)
			if !ok || b.Blob != base64.StdEncoding.EncodeToString(grown) {
				t.Errorf("read %T, not the file as it now is", res.Contents[0])
			}
		})
	}
}
