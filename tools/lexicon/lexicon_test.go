package lexicon

import (
	"slices"
	"testing"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, route string
		class       Class
		object      string
		verbs       []string
		self        bool
	}{
		{"post_customers", "POST /v1/customers", Create, "customer", nil, false},
		{"get_customers", "GET /v1/customers", List, "customer", nil, false},
		{"get_customers_customer", "GET /v1/customers/{customer}", Get, "customer", nil, false},
		{"post_customers_customer", "POST /v1/customers/{customer}", Update, "customer", nil, false},
		{"delete_customers_customer_discount", "DELETE /v1/customers/{customer}/discount", Delete, "discount", nil, false},
		{"post_invoices_invoice_send", "POST /v1/invoices/{invoice}/send", Act | Create, "invoic", []string{"send"}, false},
		{"get_customers_search", "GET /v1/customers/search", Search | List, "customer", nil, false},
		{"post_refunds_refund_cancel", "POST /v1/refunds/{refund}/cancel", Act | Delete, "refund", []string{"cancel"}, false},
		{"update_cards_closed_by_id_card", "PUT /cards/{idCard}/closed", Update, "card", nil, false},
		{"add_members_for_project", "POST /projects/{project_gid}/addMembers", Create, "member", nil, false},
		{"issues_create_comment", "POST /repos/{owner}/{repo}/issues/{issue_number}/comments", Create, "comment", nil, false},
		{"users_get_authenticated", "GET /user", Get, "user", nil, true},
		{"get_a_list_of_current_users_playlists", "GET /me/playlists", List, "playlist", nil, true},
		{"chat_post_message", "POST /chat.postMessage", Act | Create, "messag", []string{"post"}, false},
		{"create_task", "", Create, "task", nil, false},
		{"meeting_poll_create", "", Create, "poll", nil, false},
		{"create_message", "POST /2010-04-01/Accounts/{AccountSid}/Messages.json", Create, "messag", nil, false},
		{"fetch_balance", "GET /2010-04-01/Accounts/{AccountSid}/Balance.json", Get, "balanc", nil, false},
		{"post_mail_send", "POST /mail/send", Act | Create, "mail", []string{"send"}, false},
		{"get_all_projects", "GET /rest/api/3/project", Get | List, "project", nil, false},
		{"delete_message", "DELETE /2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json", Delete, "messag", nil, false},
	}
	for _, tt := range tests {
		op := Describe(tt.name, tt.route)
		if op.Class != tt.class || op.Object != tt.object || !slices.Equal(op.Verbs, tt.verbs) || op.Self != tt.self {
			t.Errorf("Describe(%s, %q) = %+v; want class %d, object %q, verbs %q, self %v", tt.name, tt.route, op, tt.class, tt.object, tt.verbs, tt.self)
		}
	}
}

func TestAnalyze(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query    string
		class    Class
		head     string
		self     bool
		question bool
		related  string // a term among Related
	}{
		{"open a bug report in my repo", Create | Get, "report", true, false, "issu"},
		{"which PRs are waiting for review", List | Get | Search, "request", false, true, "pend"},
		{"kick off a workflow manually", Create, "workflow", false, false, "run"},
		{"look at a chargeback", Get, "chargeback", false, false, "disput"},
		{"comment on a task", Create, "comment", false, false, "story"},
		{"who am I logged in as", List | Get | Search, "user", true, true, "current"},
		{"share a code snippet as a gist", Act | Create, "snippet", false, false, "past"},
		{"newly released albums", List | Get | Search, "album", false, false, "record"},
		{"make a copy of a project", Create, "project", false, false, "duplicat"},
		{"open bugs in a repo", List | Get | Search, "bug", false, false, "issu"},
		{"ask the user", Act | Create, "user", false, false, "approval"},
		{"songs on an album", List | Get | Search, "song", false, false, "track"},
		{"who is in this channel", List | Get | Search, "user", false, true, "member"},
		{"take a label off an issue", Delete, "label", false, false, "delet"},
		{"remind me tomorrow to call Bob", Create, "reminder", false, false, "reminder"},
		{"find a customer by email", Search, "customer", false, false, "client"},
		{"unsend a message", Delete, "messag", false, false, "delet"},
		{"find tasks created by me", Search | List, "task", true, false, "ticket"},
		// A request's frame is not the request: "can you" asks no
		// question, and the I of "I need to" is not whose things.
		{"can you archive a channel?", Act | Update, "channel", false, false, "clos"},
		{"I need to close an issue", Act | Update, "issu", false, false, "resolv"},
		{"I want to see my payouts", List, "payout", true, false, "cashout"},
		{"sign someone up for a webinar", Create, "someon", false, false, "add"},
		{"start watching a ticket", Act | Create, "ticket", false, false, "watcher"},
		{"what's in this folder", List, "item", false, true, "content"},
		{"phone a customer", Act | Create, "customer", false, false, "call"},
		{"who are the members of this project", List | Get | Search, "member", false, true, "user"},
		{"how many emails were delivered", List | Get | Search, "email", false, true, "count"},
		{"get a shareable link for a file", Get, "link", false, false, "shar"},
	}
	for _, tt := range tests {
		q := Analyze(tt.query)
		if q.Class != tt.class || q.Head != tt.head || q.Self != tt.self || q.Question != tt.question || q.Related[tt.related] == 0 {
			t.Errorf("Analyze(%q) = class %d, head %q, self %v, question %v, related %v; want %d, %q, %v, %v, with %q",
				tt.query, q.Class, q.Head, q.Self, q.Question, q.Related, tt.class, tt.head, tt.self, tt.question, tt.related)
		}
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"<p>Creates a new <a href=\"/docs\">customer</a> object.</p>", "Creates a new customer object."},
		{"See [the docs](https://example.com) and `code` **now**", "See the docs and code now"},
		{"A &amp; B", "A & B"},
		{"plain text", "plain text"},
	}
	for _, tt := range tests {
		if got := Clean(tt.in); got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if lead, rest := Lead("Returns a list, e.g. of issues. Then more."); lead != "Returns a list, e.g. of issues." || rest != "Then more." {
		t.Errorf("Lead = %q, %q", lead, rest)
	}
}

func TestSynonymsAreSymmetricAndStemmed(t *testing.T) {
	t.Parallel()
	for a, bs := range synonyms {
		for _, b := range bs {
			if !slices.Contains(synonyms[b], a) {
				t.Errorf("%q → %q but not back", a, b)
			}
		}
	}
	if !slices.Contains(Synonyms(Stem("dispute")), "chargeback") {
		t.Errorf("dispute does not match chargeback: %v", Synonyms(Stem("dispute")))
	}
}

func TestGeneral(t *testing.T) {
	t.Parallel()
	has := func(rels []Rel, w string) bool {
		for _, r := range rels {
			if r.Word == w {
				return true
			}
		}
		return false
	}
	tests := []struct{ word, related string }{
		{"holiday", "vacation"},
		{"salary", "pay"},
		{"refund", "repay"},
		{"parking", "park"},
		{"parked", "park"},
		{"children", "child"},
		{"automobiles", "car"},
	}
	for _, tt := range tests {
		if rels := General(tt.word); !has(rels, tt.related) {
			t.Errorf("General(%q) = %v, want %q among them", tt.word, rels, tt.related)
		}
	}
	if rels := General("zzxq"); rels != nil {
		t.Errorf("General of an unknown word = %v, want nil", rels)
	}
}

func TestLeadVerbs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text  string
		class Class
		acts  []string
	}{
		{"Creates a new customer object.", Create, nil},
		{"Add or Update a Contact", Create | Update, nil},
		{"Send a message", Act | Create, []string{"send"}},
		{"Lists all repositories", List, nil},
		{"Searches for messages matching a query.", Search | List, nil},
		{"Customer objects allow you to …", 0, nil},
		{"POST /2010-04-01/Accounts/{AccountSid}/Addresses.json", 0, nil},
	}
	for _, tt := range tests {
		class, acts := LeadVerbs(tt.text)
		if class != tt.class || !slices.Equal(acts, tt.acts) {
			t.Errorf("LeadVerbs(%q) = %d, %q; want %d, %q", tt.text, class, acts, tt.class, tt.acts)
		}
	}
}
