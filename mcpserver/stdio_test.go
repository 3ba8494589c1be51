package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/mcpserver"
)

// TestStdioFinishesWhatWasAsked pipes a whole session at once — initialize,
// then requests sent before its reply, then four runs in flight when
// stdin closes — and expects every reply, none of them cancelled.
func TestStdioFinishesWhatWasAsked(t *testing.T) {
	t.Parallel()
	for trial := range 5 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			t.Parallel()
			holdStdio(t)
			srv := newServer(t, mcpserver.Config{})
			var in strings.Builder
			in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
			in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
			in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
			for i := 2; i < 6; i++ {
				fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"await util.sleep({ms: 150}); %d"}}}`+"\n", i, i)
			}
			out, w := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- srv.ServeStdio(context.Background(), strings.NewReader(in.String()), w)
				w.Close()
			}()
			replies := map[int]string{}
			sc := bufio.NewScanner(out)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var msg struct {
					ID     *int            `json:"id"`
					Result json.RawMessage `json:"result"`
					Error  json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
					t.Fatalf("a line that is not JSON on stdout: %q", sc.Text())
				}
				if msg.ID != nil {
					replies[*msg.ID] = string(msg.Result)
					if msg.Error != nil {
						replies[*msg.ID] = "error: " + string(msg.Error)
					}
				}
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("ServeStdio did not return after EOF")
			}
			for id := 0; id < 6; id++ {
				r, ok := replies[id]
				switch {
				case !ok:
					t.Errorf("no reply to request %d", id)
				case strings.HasPrefix(r, "error: "):
					t.Errorf("request %d failed: %.300s", id, r)
				case id >= 2 && !strings.Contains(r, fmt.Sprintf(`\"status\":\"ok\",\"result\":%d`, id)):
					t.Errorf("request %d: %.300s", id, r)
				}
			}
		})
	}
}
