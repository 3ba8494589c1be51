package upstream

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestDecodePage decodes a list's page entry by entry: up to the room
// left, the rest read past (cut), the next cursor wherever it is.
func TestDecodePage(t *testing.T) {
	t.Parallel()
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"t%d"}`, i)
		}
		return b.String()
	}
	for _, tt := range []struct {
		name, page string
		room       int
		want       int
		next       string
		cut        bool
		err        string
	}{
		{"all", `{"tools":[` + many(5) + `],"nextCursor":"c2"}`, 10, 5, "c2", false, ""},
		{"cursor first", `{"nextCursor":"c2","other":{"a":[1,2]},"tools":[` + many(5) + `]}`, 10, 5, "c2", false, ""},
		{"cut", `{"tools":[` + many(50_000) + `],"nextCursor":"c2"}`, 3, 3, "c2", true, ""},
		{"no room", `{"tools":[` + many(2) + `]}`, 0, 0, "", true, ""},
		{"null list and cursor", `{"tools":null,"nextCursor":null}`, 10, 0, "", false, ""},
		{"not an object", `[1]`, 10, 0, "", false, "not an object"},
		{"not a list", `{"tools":{"name":"x"}}`, 10, 0, "", false, "not a list"},
		{"a bad entry", `{"tools":[{"name":1}]}`, 10, 0, "", false, "not a list"},
		{"a bad entry past the room", `{"tools":[{"name":"a"},{"name":]}`, 1, 0, "", false, "not a list"},
		{"a bad cursor", `{"nextCursor":3}`, 10, 0, "", false, "nextCursor"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out []remoteTool
			next, cut, err := decodePage(json.RawMessage(tt.page), "tools", tt.room, &out)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || len(out) != tt.want || next != tt.next || cut != tt.cut {
				t.Errorf("%d entries, next %q, cut %v, err %v; want %d, %q, %v", len(out), next, cut, err, tt.want, tt.next, tt.cut)
			}
			if tt.want > 0 && out[tt.want-1].Name != fmt.Sprintf("t%d", tt.want-1) {
				t.Errorf("the last entry kept is %q", out[tt.want-1].Name)
			}
		})
	}
}
