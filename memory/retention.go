package memory

// PruneReport counts what Prune deleted.
type PruneReport struct {
	Executions int64 `json:"executions"`
	Results    int64 `json:"results"`
	Episodic   int64 `json:"episodic"`
	// Cache counts expired cache entries; Plans, plans expired before a
	// commit and commits older than ExecutionsMaxAge.
	Cache int64 `json:"cache"`
	Plans int64 `json:"plans"`
	// Merges counts consolidation's records of merged memories older
	// than ExecutionsMaxAge (memory.audit_max_age).
	Merges int64 `json:"merges"`
}
