package upstream

import (
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"regexp"
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
			r := newLimitReader(strings.NewReader(tt.in), tt.kind, 1024, func(id json.RawMessage, method bool, why dropped) {
				drops = append(drops, drop{string(id), method, why.size})
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
	r := newLimitReader(strings.NewReader(in), eventStream, 16<<20, func(id json.RawMessage, method bool, why dropped) {
		drops = append(drops, drop{string(id), why.refused})
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
	r := newLimitReader(strings.NewReader(in), eventStream, 16<<20, func(json.RawMessage, bool, dropped) {})
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
	r := newLimitReader(strings.NewReader(in), eventStream, 16<<20, func(json.RawMessage, bool, dropped) {})
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

// TestLimitReaderBoundsUnheldValues (issue 19, attack15 I3): a message no
// call holds is bounded by what it decodes into — its bytes and
// DecodedValueBytes a value — not its bytes alone, unless it is the
// answer to one of codecell's requests with a result, which the
// transport keeps raw. mcp-go decoded a notification's params, a request
// from the server, an error's data and the answer to its own initialize
// into maps of every value: four notifications of 15 MB of {} grew
// codecell by 800 MiB. Keys are matched as the decoder matches them.
func TestLimitReaderBoundsUnheldValues(t *testing.T) {
	t.Parallel()
	const max = 64 << 10
	// 2,000 empty objects: 6 KB, and 256 KB decoded.
	objs := "[" + strings.Repeat("{},", 1999) + "{}]"
	text := `"` + strings.Repeat("a", 60<<10) + `"` // 60 KiB, one value
	type drop struct {
		id      string
		method  bool
		decoded bool
	}
	// A response dropped is replaced by an error saying why.
	tooMany := func(id string) string {
		return `{"error":{"code":-32099,"message":"codecell: the message decodes into about * bytes (its * bytes and 128 a JSON value), more than 65536"},"id":` + id + `,"jsonrpc":"2.0"}` + "\n"
	}
	matches := func(got, want string) bool {
		parts := strings.Split(want, "*")
		re := regexp.QuoteMeta(parts[0])
		for _, p := range parts[1:] {
			re += `\d+` + regexp.QuoteMeta(p)
		}
		return regexp.MustCompile("^" + re + "$").MatchString(got)
	}
	for _, tt := range []struct {
		name, in, want string
		drop           *drop
	}{
		{"a notification of values is dropped",
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + objs + `}}`,
			"\n", &drop{"", true, true}},
		{"a notification of text passes",
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + text + `}}`,
			"", nil},
		{"a request from the server of values is dropped",
			`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"messages":` + objs + `}}`,
			"\n", &drop{"5", true, true}},
		{"codecell's result of values passes, for its call to hold",
			`{"jsonrpc":"2.0","id":"codecell-3","result":{"structuredContent":` + objs + `}}`,
			"", nil},
		{"codecell's result with an error of values is replaced",
			`{"jsonrpc":"2.0","id":"codecell-3","result":{},"error":{"code":1,"message":"no","data":` + objs + `}}`,
			tooMany(`"codecell-3"`), &drop{`"codecell-3"`, false, true}},
		{"the answer to initialize, mcp-go's own request, is replaced",
			`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"experimental":{"x":` + objs + `}}}}`,
			tooMany("1"), &drop{"1", false, true}},
		{"a message with neither id nor method is dropped",
			`{"jsonrpc":"2.0","params":` + objs + `}`,
			"\n", &drop{"", false, true}},
		{"a method spelled with escapes and capitals is a method",
			`{"jsonrpc":"2.0","id":"codecell-3","result":{},"M\u0065THOD":"x","params":` + objs + `}`,
			"\n", &drop{`"codecell-3"`, true, true}},
		{"the last id is the decoder's",
			`{"jsonrpc":"2.0","id":"codecell-3","ID":1,"result":` + objs + `}`,
			"", &drop{"1", false, true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var drops []drop
			r := newLimitReader(strings.NewReader(tt.in+"\n"), jsonLines, max, func(id json.RawMessage, method bool, why dropped) {
				drops = append(drops, drop{string(id), method, why.decoded > 0})
			})
			out, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if tt.drop == nil {
				want = tt.in + "\n"
			}
			if want != "" && !matches(string(out), want) {
				t.Errorf("got %.300s, want %.300s", out, want)
			}
			switch {
			case tt.drop == nil && len(drops) > 0:
				t.Errorf("dropped %+v", drops)
			case tt.drop != nil && (len(drops) != 1 || drops[0] != *tt.drop):
				t.Errorf("drops %+v, want %+v", drops, *tt.drop)
			}
		})
	}
	// The same on an event stream, the Streamable HTTP GET stream's.
	in := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":" + objs + "}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	r := newLimitReader(strings.NewReader(in), eventStream, max, nil)
	out, err := io.ReadAll(r)
	if want := ":\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"; err != nil || string(out) != want {
		t.Errorf("event stream: got %q, %v; want %q", out, err, want)
	}
}

// TestIDScannerPieces: the scanner's tight loop within top-level values
// finds what its byte-at-a-time step finds, fed in pieces of any size.
func TestIDScannerPieces(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{`"id"`, `"ID"`, `"method"`, `"M\u0045thod"`, `"error"`, `"result"`, `"params"`, `"x"`}
	values := []string{`1`, `"codecell-1"`, `"a\"b"`, `{"id":2,"method":"m"}`, `[1,"]",{"error":[]}]`, `null`, `"\\"`, `{"a":[[{}]],"b":"}"}`}
	for range 2000 {
		var b strings.Builder
		b.WriteString("{")
		for i := range rng.IntN(6) {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(keys[rng.IntN(len(keys))] + ":" + values[rng.IntN(len(values))])
		}
		b.WriteString("}")
		text := b.String()
		var want, got idScanner
		for i := range len(text) {
			want.step(text[i])
		}
		for rest := text; rest != ""; {
			n := min(1+rng.IntN(8), len(rest))
			got.feed([]byte(rest[:n]))
			rest = rest[n:]
		}
		if string(got.id) != string(want.id) || got.method != want.method || got.error != want.error || got.depth != want.depth {
			t.Fatalf("%s: fed %q %v %v, stepped %q %v %v", text, got.id, got.method, got.error, want.id, want.method, want.error)
		}
	}
}
