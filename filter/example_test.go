package filter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"

	"github.com/codecell/codecell/filter"
)

// A tool returned customer records; the program returned them and logged a
// line. The model sees tokens and markers, and a later tool call can use
// the tokens.
func ExampleFilter_Apply() {
	key, _ := filter.KeyFromBytes(bytes.Repeat([]byte{1}, filter.KeySize)) // use LoadOrCreateKey in a server
	vault, err := filter.NewVault(key, "local", filter.VaultOptions{
		Rules: []filter.Rule{{From: "crm.*", To: "http.*"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	f, err := filter.New(filter.Config{Budget: 1024, Compact: true})
	if err != nil {
		log.Fatal(err)
	}
	result := `[{"id":1,"name":"Ada","email":"ada@example.com","password":"hunter22"},
	            {"id":2,"name":"Bob","email":"bob@example.org","password":"s3cret!!"}]`
	out, err := f.Apply(filter.Input{
		Result: json.RawMessage(result),
		Logs:   []string{"loaded ada@example.com"},
	}, filter.Options{
		Vault:  vault,
		Origin: func(string) []string { return []string{"crm.list_customers"} },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out.Limited))
	fmt.Println(out.Compact)
	fmt.Println(out.Logs[0])
	fmt.Printf("tokenized %d, redacted %d, %d → %d bytes\n",
		out.Report.Tokenized, out.Report.Redacted, out.Report.OriginalBytes, out.Report.ReturnedBytes)

	// A later program passes a token to a tool: the tool gets the value.
	args, err := vault.Resolve(json.RawMessage(`{"to":"⟦email:602d349d⟧","subject":"Hi"}`), "mail.send")
	fmt.Println(string(args), err)
	// Values from crm.* may not go to http.*.
	_, err = vault.Resolve(json.RawMessage(`{"body":"⟦email:602d349d⟧"}`), "http.post")
	fmt.Println(err)
	// Output:
	// [{"id":1,"name":"Ada","email":"⟦email:602d349d⟧","password":"⟦password:redacted⟧"},{"id":2,"name":"Bob","email":"⟦email:a753ec36⟧","password":"⟦password:redacted⟧"}]
	// [2]{id,name,email,password}:
	//   1,Ada,⟦email:602d349d⟧,⟦password:redacted⟧
	//   2,Bob,⟦email:a753ec36⟧,⟦password:redacted⟧
	// loaded ⟦email:602d349d⟧
	// tokenized 3, redacted 2, 155 → 181 bytes
	// {"to":"ada@example.com","subject":"Hi"} <nil>
	// rule "crm.*" → "http.*" forbids passing ⟦email:602d349d⟧ (a value from crm.list_customers) to http.post
}

// A run reads a contact from the CRM; a rule forbids CRM data to go to
// http tools. The flow refuses the webhook call however the program dressed
// the value, lets other calls through, hides the contact's password in
// whatever the program prints, and names the sources of what it stores.
func ExampleFlow() {
	f, err := filter.New(filter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	flow, err := f.NewFlow(filter.FlowOptions{Rules: []filter.Rule{{From: "crm.*", To: "http.*"}}})
	if err != nil {
		log.Fatal(err)
	}
	// What crm.get_contact returned.
	flow.Observe("crm.get_contact", json.RawMessage(`{"name":"Ada Lovelace","email":"ada@example.com","password":"hunter2-Horse"}`), filter.Provenance{})

	// The program sends the e-mail, upper-cased and base64-encoded, to a webhook.
	fmt.Println(flow.Check("http.post_webhook", json.RawMessage(`{"v":"QURBQEVYQU1QTEUuQ09N"}`)))
	fmt.Println(flow.Check("mail.send", json.RawMessage(`{"to":"ada@example.com"}`)))

	// It prints the password without its field name, upper-cased.
	fmt.Println(f.ApplyText("login with HUNTER2-HORSE", filter.Options{Flow: flow}).Text)

	// It saves a note to memory: the store keeps where it came from.
	fmt.Println(flow.Provenance(json.RawMessage(`{"text":"call Ada Lovelace"}`)))
	// Output:
	// rule "crm.*" → "http.*" forbids passing a value from crm.get_contact to http.post_webhook (argument /v, base64-encoded)
	// <nil>
	// login with ⟦password:redacted⟧
	// crm.get_contact
}
