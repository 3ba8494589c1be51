package search_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

func Example() {
	reg := tools.NewRegistry()
	noop := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	_ = reg.Register(
		tools.Tool{Name: "crm.get_user", Summary: "Get a user by id.", Handler: noop,
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"email":{"type":"string"}},"required":["id"]}`)},
		tools.Tool{Name: "crm.delete_user", Summary: "Delete a user.", Handler: noop, Annotations: tools.Annotations{Destructive: true}},
		tools.Tool{Name: "mail.send", Summary: "Send an e-mail.", Handler: noop},
	)
	fsys := vfs.New(reg)
	ix := search.New(reg, func(c tools.Caller) search.Docs { return fsys.For(c) })

	hits, _ := ix.Search(search.Query{Text: "fetchUser", Limit: 2})
	for _, h := range hits {
		fmt.Printf("%s: %s output=%s signature=%d bytes (%s)\n", h.Name, h.Summary, h.Output, h.Cost.Signature.Bytes, h.Cost.SignaturePath)
	}
	// Output:
	// crm.get_user: Get a user by id. output={id: string, email?: string} signature=230 bytes (crm/get_user.d.ts)
	// crm.delete_user: Delete a user. output=unknown signature=213 bytes (crm/delete_user.d.ts)
}
