package memory

import (
	"encoding/json"
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
	// Provenance is that of the memories carrying the tag, together
	// (UnionProvenance): a tag is data of its memory's sources (issue
	// 19, attack18 K5). Absent when none of them has any.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// AddTagProvenance joins prov, the provenance of a memory carrying tag,
// to tag's entry in tags.
func AddTagProvenance(tags []TagCount, tag string, prov json.RawMessage) {
	for i := range tags {
		if tags[i].Tag == tag {
			tags[i].Provenance = UnionProvenance(tags[i].Provenance, prov)
		}
	}
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
