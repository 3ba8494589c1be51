package sqlite

import (
	"database/sql"
	"encoding/json"
)

// provenanceArg is p as a column value.
func provenanceArg(p json.RawMessage) any {
	if p == nil {
		return nil
	}
	return string(p)
}

// provenanceOf is a provenance column as read.
func provenanceOf(v sql.NullString) json.RawMessage {
	if !v.Valid {
		return nil
	}
	return json.RawMessage(v.String)
}
