package upstream

// How much of a tool's results is observed, for the tests.
const (
	LearnMaxResults  = learnMaxResults
	LearnStableAfter = learnStableAfter
)
