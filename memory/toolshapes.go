package memory

import (
	"bytes"
	"encoding/json"
)

// MaxToolShapeBytes bounds what PutToolShape stores for one tool, as
// compact JSON.
const MaxToolShapeBytes = 64 << 10

// MaxToolShapes bounds the tools a source keeps shapes for: storing one
// more drops the one stored least recently.
const MaxToolShapes = 1000

// maxToolShapeKey bounds a source's or a tool's name.
const maxToolShapeKey = 256

// CheckToolShape checks a tool shape to store and returns it compacted.
func CheckToolShape(source, tool string, shape json.RawMessage) (string, error) {
	if err := checkToolShapeKey("source", source); err != nil {
		return "", err
	}
	if err := checkToolShapeKey("tool", tool); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, shape); err != nil {
		return "", Invalid("tool shape of %s %s is not valid JSON: %v", Clip(source, 40), Clip(tool, 40), err)
	}
	if buf.Len() > MaxToolShapeBytes {
		return "", TooLarge("tool shape of %s %s is %d bytes as JSON; the limit is %d bytes", Clip(source, 40), Clip(tool, 40), buf.Len(), MaxToolShapeBytes)
	}
	return buf.String(), nil
}

func checkToolShapeKey(what, v string) error {
	if v == "" || len(v) > maxToolShapeKey {
		return Invalid("tool shape: %s name must be 1 to %d bytes, got %d", what, maxToolShapeKey, len(v))
	}
	return nil
}
