package upstream

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
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
			next, cut, err := decodePage(json.RawMessage(tt.page), "tools", &listRoom{entries: tt.room, values: -1}, &out)
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

// TestDecodePageValues keeps a list's entries, decoded into mcp-go's
// types, while their JSON values fit: a prompt of 330,000 arguments {}
// (1 MB) was 20 MB decoded.
func TestDecodePageValues(t *testing.T) {
	t.Parallel()
	args := strings.TrimSuffix(strings.Repeat("{},", 330_000), ",")
	page := `{"prompts":[{"name":"a","arguments":[{"name":"x"}]},{"name":"b","arguments":[` + args + `]},{"name":"c"}],"nextCursor":"n"}`
	var out []mcp.Prompt
	room := listRoom{entries: 10, values: maxFeatureValues}
	next, cut, err := decodePage(json.RawMessage(page), "prompts", &room, &out)
	if err != nil || !cut || next != "n" || len(out) != 1 || out[0].Name != "a" || len(out[0].Arguments) != 1 {
		t.Errorf("%d prompts (%v), cut %v, next %q, err %v; want the first only, cut", len(out), out, cut, next, err)
	}
	if room.entries != 0 {
		t.Errorf("room left after a cut: %+v", room)
	}
	for _, tt := range []struct {
		text string
		want int
	}{
		{`1`, 1},
		{`[1,1,1]`, 4},
		{`{"a":"{[,:]}","b":[{}]}`, 7},
		{`"\"{"`, 1},
		{`"\\\\"{}`, 2},
	} {
		if got := jsonValues([]byte(tt.text)); got != tt.want {
			t.Errorf("jsonValues(%s) = %d, want %d", tt.text, got, tt.want)
		}
	}
}
