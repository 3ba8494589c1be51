package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

type handleIn struct {
	Query string    `json:"query"`
	Limit int       `json:"limit"`
	Score float64   `json:"score"`
	Tags  []string  `json:"tags"`
	Since time.Time `json:"since"`
	Deep  struct {
		On bool `json:"on"`
	} `json:"deep"`
}

func TestHandle(t *testing.T) {
	t.Parallel()
	var got handleIn
	h := tools.Handle(func(_ context.Context, in handleIn) (map[string]int, error) {
		got = in
		if in.Query == "fail" {
			return nil, tools.Errorf(tools.CodeNotFound, "nothing for %q", in.Query)
		}
		return map[string]int{"limit": in.Limit}, nil
	})
	tests := []struct {
		name, args, want, wantCode, wantMsg string
	}{
		{name: "decodes and encodes", args: `{"query":"q","limit":3}`, want: `{"limit":3}`},
		{name: "empty args are the zero value", args: ``, want: `{"limit":0}`},
		{name: "string for an integer", args: `{"limit":"3"}`, wantCode: tools.CodeInvalidArguments, wantMsg: "limit: got a JSON string, want an integer"},
		{name: "fraction for an integer", args: `{"limit":1.5}`, wantCode: tools.CodeInvalidArguments, wantMsg: "limit: got a JSON number 1.5, want an integer"},
		{name: "object for a number", args: `{"score":{}}`, wantCode: tools.CodeInvalidArguments, wantMsg: "score: got a JSON object, want a number"},
		{name: "string for an array", args: `{"tags":"a"}`, wantCode: tools.CodeInvalidArguments, wantMsg: "tags: got a JSON string, want an array"},
		{name: "nested field", args: `{"deep":{"on":"yes"}}`, wantCode: tools.CodeInvalidArguments, wantMsg: "deep.on: got a JSON string, want true or false"},
		{name: "array for the arguments", args: `[1]`, wantCode: tools.CodeInvalidArguments, wantMsg: "arguments: got a JSON array, want an object"},
		{name: "bad time", args: `{"since":"yesterday"}`, wantCode: tools.CodeInvalidArguments, wantMsg: `a time value "yesterday" is not RFC 3339`},
		{name: "unknown field", args: `{"querry":"q"}`, wantCode: tools.CodeInvalidArguments, wantMsg: `arguments: unknown field "querry"`},
		{name: "not JSON", args: `{"query":`, wantCode: tools.CodeInvalidArguments, wantMsg: "arguments are not valid JSON"},
		{name: "the function's error passes through", args: `{"query":"fail"}`, wantCode: tools.CodeNotFound, wantMsg: `nothing for "fail"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := h(t.Context(), json.RawMessage(tt.args))
			if tt.wantCode == "" {
				if err != nil || string(out) != tt.want {
					t.Fatalf("got %s, %v; want %s", out, err, tt.want)
				}
				return
			}
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != tt.wantCode {
				t.Fatalf("err %v (%T), want an *Error with code %s", err, err, tt.wantCode)
			}
			if !strings.Contains(te.Message, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", te.Message, tt.wantMsg)
			}
			if strings.Contains(te.Message, "json:") || strings.Contains(te.Message, "Go value") {
				t.Errorf("message %q speaks of Go's decoder", te.Message)
			}
		})
	}
	if got.Query != "fail" {
		t.Errorf("the function saw %+v", got)
	}
}
