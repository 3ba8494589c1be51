package security

import (
	"regexp"
	"strings"
	"testing"
)

// tokenRE finds a token the filter made.
var tokenRE = regexp.MustCompile(`⟦email:[0-9a-f]+⟧`)

// TestGateLLMPromptsFiltered (issue 19, High 6): whatever a program puts
// in a sampling request — a tool's value whole, inside a sentence, as a
// system prompt, as an item to classify or a text to extract from — the
// client's model sees it as the output filter shows it.
func TestGateLLMPromptsFiltered(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, ""))
	u := &user{}
	alice := s.connect(t, aliceToken, u, "api", "vault")
	for _, code := range []string{
		`return (await llm.call({prompt: "Summarise: " + JSON.stringify(s)})).text`,
		`return (await llm.call("The password is " + s.password + " and the key " + s.api_key)).text`,
		`return (await llm.call({messages: [{role: "user", content: "mail " + s.email}], system: "key=" + s.api_key})).text`,
		`try { await llm.classify([s, s.email, {note: s.password}], ["a", "b"]) } catch (e) { return e.code }`,
		`try { await llm.extract(s.password + " " + s.email, {type: "object"}) } catch (e) { return e.code }`,
		// Third round, H8: what goes beside the prompt.
		`return (await llm.call({prompt: "hello", stopSequences: [s.password, s.api_key, s.email], modelPreferences: {hints: [{name: s.password}, {name: s.email}]}})).text`,
	} {
		if rec := alice.run(`const s = await vault.get_secret(); ` + code); rec.Status != "ok" {
			t.Errorf("%s: %.400s", code, rec.raw)
		}
	}
	prompts, _ := u.seen()
	if len(prompts) < 6 {
		t.Fatalf("the model was asked %d times, want at least 6", len(prompts))
	}
	for _, p := range prompts {
		noPlanted(t, "a sampling request", p)
	}
	alice.normal()
}

// TestGateLLMTokens (issue 19, High 7): a token in a prompt reaches the
// model as the token, never as the value it stands for.
func TestGateLLMTokens(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, ""))
	u := &user{}
	alice := s.connect(t, aliceToken, u, "api", "vault")
	tok := tokenRE.FindString(alice.run(`(await vault.get_secret()).email`).raw)
	if tok == "" {
		t.Fatal("no token for the e-mail address")
	}
	for _, code := range []string{
		`await llm.call({prompt: "who is ` + tok + `?"})`,
		`await llm.call({messages: [{role: "user", content: "` + tok + `"}], system: "about ` + tok + `"})`,
		`try { await llm.classify(["` + tok + `"], ["a", "b"]) } catch (e) {}`,
		`try { await llm.extract("` + tok + `", {type: "object"}) } catch (e) {}`,
	} {
		if rec := alice.run(code + `; 1`); rec.Status != "ok" {
			t.Errorf("%s: %.400s", code, rec.raw)
		}
	}
	prompts, _ := u.seen()
	if len(prompts) < 4 {
		t.Fatalf("the model was asked %d times, want at least 4", len(prompts))
	}
	for _, p := range prompts {
		noPlanted(t, "a sampling request", p)
		if !strings.Contains(p, tok) {
			t.Errorf("a sampling request lost the token: %.600s", p)
		}
	}
	alice.normal()
}
