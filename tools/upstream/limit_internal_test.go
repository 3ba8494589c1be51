package upstream

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestLimitReader passes messages up to the limit as they are, and turns
// a longer one into an error response to its id, wherever the id is in
// it, in every framing.
func TestLimitReader(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", 5000)
	type drop struct {
		id     string
		method bool
		size   int64
	}
	for _, tt := range []struct {
		name  string
		kind  streamKind
		in    string
		want  string
		drops []drop
	}{
		{"short lines pass", jsonLines,
			`{"jsonrpc":"2.0","id":"codecell-1","result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"x"}` + "\n",
			`{"jsonrpc":"2.0","id":"codecell-1","result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"x"}` + "\n", nil},
		{"a long line, id first", jsonLines,
			`{"jsonrpc":"2.0","id":"codecell-2","result":{"text":"` + big + `"}}` + "\n" + `{"id":3,"result":1}` + "\n",
			`{"error":{"code":-32099,"message":"codecell: the message was larger than 1024 bytes"},"id":"codecell-2","jsonrpc":"2.0"}` + "\n" + `{"id":3,"result":1}` + "\n",
			[]drop{{`"codecell-2"`, false, 5062}}},
		{"a long line, id last, escapes and nesting before it", jsonLines,
			`{"result":{"text":"\"id\":\"no\"` + big + `","id":"nested"},"jsonrpc":"2.0","id":7}`,
			`{"error":{"code":-32099,"message":"codecell: the message was larger than 1024 bytes"},"id":7,"jsonrpc":"2.0"}` + "\n",
			[]drop{{`7`, false, 5061}}},
		{"a long notification is dropped", jsonLines,
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}` + "\n",
			"\n", []drop{{"", true, 5076}}},
		{"a long body", wholeBody,
			"{\n  \"jsonrpc\": \"2.0\",\n  \"result\": \"" + big + "\",\n  \"id\": \"codecell-9\"\n}\n",
			`{"error":{"code":-32099,"message":"codecell: the message was larger than 1024 bytes"},"id":"codecell-9","jsonrpc":"2.0"}`,
			[]drop{{`"codecell-9"`, false, 5061}}},
		{"events pass, a long one is replaced", eventStream,
			"event: message\ndata: {\"id\":1,\"result\":2}\n\n" +
				"event: message\nid: 5\ndata: {\"result\":\"" + big + "\",\n" + "data: \"id\":\"codecell-4\"}\n\n" +
				": ping\n\n",
			"event: message\ndata: {\"id\":1,\"result\":2}\n\n" +
				"event: message\ndata: {\"error\":{\"code\":-32099,\"message\":\"codecell: the message was larger than 1024 bytes\"},\"id\":\"codecell-4\",\"jsonrpc\":\"2.0\"}\n\n" +
				": ping\n\n",
			[]drop{{`"codecell-4"`, false, 5063}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var drops []drop
			r := newLimitReader(strings.NewReader(tt.in), tt.kind, 1024, func(id json.RawMessage, method bool, size int64, _ error) {
				drops = append(drops, drop{string(id), method, size})
			})
			// Small reads, as a transport's may be.
			var out strings.Builder
			buf := make([]byte, 7)
			for {
				n, err := r.Read(buf)
				out.Write(buf[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if out.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tt.want)
			}
			if len(drops) != len(tt.drops) || (len(drops) > 0 && (drops[0].id != tt.drops[0].id || drops[0].method != tt.drops[0].method)) {
				t.Errorf("drops %+v, want %+v", drops, tt.drops)
			}
		})
	}
}

// TestLimitReaderHolds: with a holder, a message is held as it is read
// (its bytes so far and its values); one the holder refuses is dropped
// as it arrives and replaced, for its id, wherever the id is, and the
// stream goes on. A long message it holds passes whole, however many
// pieces it was read in.
func TestLimitReaderHolds(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("b", 200<<10)
	in := "event: message\ndata: {\"result\":\"" + long + "\",\"id\":\"codecell-1\"}\n\n" +
		"event: message\ndata: {\"result\":\"" + long + long + "\",\n" + "data: \"id\":\"codecell-2\"}\n\n" +
		"event: message\ndata: {\"id\":3,\"result\":[1,2,3]}\n\n"
	var held []int64
	refusal := errors.New("refused")
	type drop struct {
		id      string
		refused error
	}
	var drops []drop
	r := newLimitReader(strings.NewReader(in), eventStream, 16<<20, func(id json.RawMessage, method bool, size int64, refused error) {
		drops = append(drops, drop{string(id), refused})
	})
	r.hold = func(size int64, values int) error {
		held = append(held, size)
		if size > 300<<10 {
			return refusal
		}
		return nil
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "event: message\ndata: {\"result\":\"" + long + "\",\"id\":\"codecell-1\"}\n\n" +
		"event: message\ndata: {\"error\":{\"code\":-32099,\"message\":\"codecell: the message could not be held in the results in flight\"},\"id\":\"codecell-2\",\"jsonrpc\":\"2.0\"}\n\n" +
		"event: message\ndata: {\"id\":3,\"result\":[1,2,3]}\n\n"
	if string(out) != want {
		t.Errorf("got %.300s…, want %.300s…", out, want)
	}
	if len(drops) != 1 || drops[0].id != `"codecell-2"` || drops[0].refused != refusal {
		t.Errorf("drops %+v", drops)
	}
	if len(held) < 4 || slices.Max(held) > 301<<10+64<<10 {
		t.Errorf("held %v: not as the messages were read", held)
	}
}

// TestLimitReaderCountsDataOnly (attack12 G2): the values of an event were
// counted over its every line, so a comment holding a quote made the
// counter read the data's JSON as a string, and a hostile upstream's 15 MB
// of {} was held at its bytes alone until it was whole.
func TestLimitReaderCountsDataOnly(t *testing.T) {
	t.Parallel()
	const n = 10000
	in := ": \"\nevent: message\nid: 7\ndata: {\"id\":1,\"result\":[" + strings.Repeat("{},", n) + "{}]}\n\n"
	r := newLimitReader(strings.NewReader(in), eventStream, 16<<20, func(json.RawMessage, bool, int64, error) {})
	most := 0
	r.hold = func(_ int64, values int) error {
		most = max(most, values)
		return nil
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if most < n {
		t.Errorf("held %d values of an event of more than %d", most, n)
	}
}

// TestLimitReaderBlankLines (attack13 H2): a line of carriage returns ends
// an event for mcp-go, which trims them all; read as part of the next
// event, a lone quote before it hid that event's values from the count.
func TestLimitReaderBlankLines(t *testing.T) {
	t.Parallel()
	const n = 10000
	in := "data: \"\n\r\r\n" + "data: {\"id\":1,\"result\":[" + strings.Repeat("{},", n) + "{}]}\n\n"
	r := newLimitReader(strings.NewReader(in), eventStream, 16<<20, func(json.RawMessage, bool, int64, error) {})
	most := 0
	r.hold = func(_ int64, values int) error {
		most = max(most, values)
		return nil
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if most < n {
		t.Errorf("held %d values of an event of more than %d", most, n)
	}
}
