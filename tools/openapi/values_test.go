package openapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// TestDocumentOfValues (issue 19, attack9 D5): a document within
// MaxDocumentBytes of empty objects under an x- extension decoded into
// 35 times its bytes; its values are counted first, JSON or YAML, and it
// is refused past MaxDocumentValues, naming the bound.
func TestDocumentOfValues(t *testing.T) {
	t.Parallel()
	junk := "[" + strings.Repeat("{},", openapi.MaxDocumentValues) + "{}]"
	ok := `"paths":{"/x":{"get":{"operationId":"x","responses":{"200":{"description":"ok"}}}}}`
	for name, doc := range map[string]string{
		"json": `{"openapi":"3.0.3","info":{"title":"junk","version":"1"},"x-junk":` + junk + `,` + ok + `}`,
		"yaml": "openapi: 3.0.3\ninfo: {title: junk, version: '1'}\nx-junk: " + junk + "\npaths:\n  /x:\n    get:\n      operationId: x\n      responses: {'200': {description: ok}}\n",
	} {
		_, err := openapi.Parse([]byte(doc))
		if !errors.Is(err, openapi.ErrDocument) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d JSON values", openapi.MaxDocumentValues)) {
			t.Errorf("%s: a document of %d empty objects: %v", name, openapi.MaxDocumentValues+1, err)
		}
	}
	// The same with a few of them loads.
	few := `{"openapi":"3.0.3","info":{"title":"junk","version":"1"},"x-junk":[{},{}],` + ok + `}`
	if _, err := openapi.Parse([]byte(few)); err != nil {
		t.Errorf("a document of two empty objects: %v", err)
	}
}

// TestResponseValuesHeld (issue 19, attack9 D6): an API's JSON response
// is held as what it decodes into — its bytes and DecodedValueBytes a
// value — before it is decoded, and a response the holder refuses fails
// the call with the holder's error.
func TestResponseValuesHeld(t *testing.T) {
	t.Parallel()
	body := `[{},{},{}]`
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(api.Close)
	spec := filepath.Join(t.TempDir(), "vals.json")
	os.WriteFile(spec, []byte(`{"openapi":"3.0.3","info":{"title":"vals","version":"1"},"paths":{"/things":{"get":{"operationId":"things","responses":{"200":{"description":"ok"}}}}}}`), 0o600)
	s, err := openapi.New(openapi.Config{Spec: spec, BaseURL: api.URL}, openapi.Options{Name: "vals"})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := s.Open(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	want := int64(len(body) + 4*tools.DecodedValueBytes)
	// Then the registry holds the result with the copies the server
	// makes of it (tools.ResultCopies).
	final := int64(tools.ResultCopies*len(body) + 4*tools.DecodedValueBytes)
	refuse := errors.New("refused")
	for _, limit := range []int64{final, final - 1, want - 1} {
		var held []int64
		ctx := tools.WithDecodedHolder(t.Context(), func(_ context.Context, n int64) error {
			held = append(held, n)
			if n > limit {
				return refuse
			}
			return nil
		})
		out, err := reg.Call(ctx, "vals.things", json.RawMessage(`{}`))
		if len(held) == 0 || held[0] != want {
			t.Errorf("limit %d: held %v, want %d first (the response)", limit, held, want)
		}
		if refused := errors.Is(err, refuse); refused != (limit < final) {
			t.Errorf("limit %d: %s, %v", limit, out, err)
		}
	}
}
