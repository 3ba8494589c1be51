package security

import (
	"strings"
	"testing"
)

// TestPaginateHiddenOperationIsNothing (issue 19, attack27 T3): bob,
// whose toolset hides three operations of api, gets from api.paginate
// for each of them what a name of no operation gets — not its page's
// error, nor whether it pages — and nothing is sent.
func TestPaginateHiddenOperationIsNothing(t *testing.T) {
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, "[access.principal.bob]\ndeny = [\"api.list_things\", \"api.create_user\", \"api.search_things\"]\n"))
	bob := s.connect(t, bobToken, &user{}, "api")
	ask := func(name string) string {
		rec := bob.run(`try { await api.paginate({tool: "` + name + `", args: {}}); return "sent" } catch (e) { return e.code + ": " + e.message }`)
		return strings.ReplaceAll(string(rec.Result), name, "NAME")
	}
	none := ask("no_such_operation")
	if !strings.Contains(none, "unknown_tool") {
		t.Fatalf("a name of nothing: %s", none)
	}
	for _, n := range []string{"list_things", "create_user", "search_things", "api.list_things"} {
		if got := ask(n); got != none {
			t.Errorf("api.paginate of the hidden %s: %s; a name of nothing: %s", n, got, none)
		}
	}
	if got := api.got(""); len(got) != 0 {
		t.Errorf("the API was sent %q", got)
	}
}
