package memory

import (
	"time"
)

// MemoryStats summarizes one principal's memory.
type MemoryStats struct {
	Memories  int            `json:"memories"`
	Layers    map[Layer]int  `json:"layers"`
	Tasks     map[string]int `json:"tasks"`
	Entities  int            `json:"entities"`
	Relations int            `json:"relations"`
	Merged    int            `json:"merged"`
	TopTags   []TagCount     `json:"top_tags"`
	Oldest    *time.Time     `json:"oldest,omitempty"`
	Newest    *time.Time     `json:"newest,omitempty"`
	Embedder  map[string]any `json:"embedder"`
}

// TagCount is a tag and how many memories carry it.
type TagCount struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

// StoreStats summarizes the whole database, every principal included, for
// `codecell memory stats`.
type StoreStats struct {
	Path          string         `json:"path"`
	FileBytes     int64          `json:"file_bytes"`
	SchemaVersion int            `json:"schema_version"`
	Embedder      EmbedderStatus `json:"embedder"`
	// Principals counts the principals that hold anything in the store,
	// the audit log included.
	Principals   int           `json:"principals"`
	Memories     int           `json:"memories"`
	Layers       map[Layer]int `json:"layers"`
	Entities     int           `json:"entities"`
	Relations    int           `json:"relations"`
	Executions   int           `json:"executions"`
	ToolCalls    int           `json:"tool_calls"`
	Results      int           `json:"results"`
	ResultBytes  int64         `json:"result_bytes"`
	Files        int           `json:"workspace_files"`
	FileBytesRaw int64         `json:"workspace_bytes"`
	Skills       int           `json:"skills"`
	// PublishedSkills counts the published snapshots.
	PublishedSkills int `json:"published_skills"`
}
