package security

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestHugeNumbersInArguments (issue 19, attack26 T6): the schema
// validator read each number of a tool call's arguments as a big.Rat
// from its text, at a cost that grows faster than its digits: one
// execute_code call whose timeout_ms and budget_bytes were "1." and a
// million zeros took 9.3 s of the server's CPU, before any run, rate
// limit or pool slot. Such a number is now refused, saying to send it as
// a string, before the validator reads it.
func TestHugeNumbersInArguments(t *testing.T) {
	t.Parallel()
	s := start(t)
	pid := s.cmd.Process.Pid
	alice := s.open(t, aliceToken)
	for _, num := range []string{"1." + strings.Repeat("0", 1_000_000), "1e999999"} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"1","timeout_ms":%s,"budget_bytes":%s}}}`, num, num)
		cpu := cpuSeconds(pid)
		code, _, out := do(t, http.MethodPost, alice.url, alice.header(), body)
		t.Logf("%.12s… (%d bytes): HTTP %d, server CPU %.2f s: %.300s", num, len(num), code, cpuSeconds(pid)-cpu, out)
		if num == "1e999999" {
			continue // mcp-go refuses it first (float64 overflow); the server must only stay up
		}
		if !strings.Contains(out, "send it as a string") {
			t.Errorf("a number of a million digits: %.400s", out)
		}
	}
	alice.normal()
}
