package security

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// upstreamHandler is an upstream MCP server over Streamable HTTP with JSON
// answers: a request's result is what answer makes of its method and
// params ("" answers {}), a notification is accepted with nothing to say,
// and anything but a POST of JSON is refused.
func upstreamHandler(answer func(method string, params json.RawMessage) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || json.Unmarshal(b, &msg) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if len(msg.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := answer(msg.Method, msg.Params)
		if result == "" {
			result = `{}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}
}
