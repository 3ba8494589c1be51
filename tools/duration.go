package tools

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Duration is a time.Duration as configuration writes it: "5s", "1m30s".
// It is the one duration type of codecell's configuration — the file's
// sections, its [upstream.NAME] and [openapi.NAME] tables, and a host's
// JSON configuration, where a number is taken as seconds, as some hosts
// write timeouts.
type Duration time.Duration

// UnmarshalText parses a duration such as "5s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 5s or 1m30s", string(b))
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as "5s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalJSON takes "30s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return d.UnmarshalText([]byte(s))
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("%s is not a duration such as \"30s\" or a number of seconds", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
