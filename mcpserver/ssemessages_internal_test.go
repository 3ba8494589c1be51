package mcpserver

import "testing"

// TestAnswerID: the stream's writer releases a request when it writes the
// answer carrying its id, and nothing else: not a request or
// notification of the server's, not an event of another kind.
func TestAnswerID(t *testing.T) {
	for _, tc := range []struct {
		event, id string
		ok        bool
	}{
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n", "n:7", true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"7\",\"error\":{\"code\":-32600}}\n\n", "s:7", true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\",\"params\":{}}\n\n", "", false},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n", "", false},
		{"event: endpoint\ndata: /message?sessionId=x\r\n\r\n", "", false},
		{"event: message\ndata: not json\n\n", "", false},
	} {
		id, ok := answerID([]byte(tc.event))
		if id != tc.id || ok != tc.ok {
			t.Errorf("answerID(%q) = %q, %v; want %q, %v", tc.event, id, ok, tc.id, tc.ok)
		}
	}
}
