package tools

// EstimateTokens estimates the model tokens that n bytes of JSON or text
// take: one token per 4 bytes, rounded up. Tokenizers of current models
// average 3.5 to 4.5 bytes per token on English text and JSON; the
// estimate is for the context ledger and the tool tree's costs, not for
// billing.
func EstimateTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + 3) / 4
}
