package tools

// Cost is what reading a text takes from a context window.
type Cost struct {
	Bytes  int `json:"bytes"`
	Tokens int `json:"tokens"`
}

// CostOf returns the cost of n bytes.
func CostOf(n int) Cost { return Cost{Bytes: n, Tokens: EstimateTokens(n)} }

// EstimateTokens estimates the model tokens that n bytes of JSON, text or
// TypeScript take: one token per 4 bytes, rounded up; 0 for n <= 0. Four
// bytes a token is the usual rule of thumb for English text with today's
// BPE tokenizers (cl100k, o200k, Claude's, which average 3.5 to 4.5 bytes
// per token); JSON and TypeScript with many short identifiers and
// punctuation run somewhat denser, so read the figure as a budget hint
// within about 20%, not a count or a bill. It needs no tokenizer and is the
// same for every model, so every figure codecell reports (tree listings,
// search costs, the context ledger) uses this one function.
func EstimateTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + 3) / 4
}
