package filter

import "fmt"

// pageTextMargin is how far either side of a text page's boundary
// PageText looks for a value the boundary would cut: more than the
// longest value the detectors find in practice (a PEM private key of a
// 4096-bit RSA key is about 3.3 KB).
const pageTextMargin = 8 << 10

// PageText is PageBytes for text that has not passed the filter (an
// artifact read as text): each page is then filtered alone, so neither
// boundary may cut a value the detectors would find whole — each half
// would pass unseen. A boundary inside such a value moves back to the
// value's start; the end moves forward to the value's end instead when
// moving back would leave the page empty, so a page may run past length
// by one value. Not seen: a value longer than pageTextMargin, and the
// values a session's vault knows (Options.Vault) that no detector finds.
func PageText(full []byte, offset, length int) (BytePage, error) {
	total := len(full)
	if offset < 0 || offset > total || (offset == total && total > 0) {
		return BytePage{}, fmt.Errorf("page text: offset %d of %d: %w", offset, total, ErrPageRange)
	}
	if length <= 0 {
		return BytePage{}, fmt.Errorf("page text: length %d: %w", length, ErrPageRange)
	}
	start, _ := valueAround(full, runeStart(full, offset))
	end := runeStart(full, min(total, offset+length))
	if back, forward := valueAround(full, end); back > start {
		end = back
	} else {
		end = forward
	}
	if end <= start && start < total {
		// A page must move on: one rune at least.
		end = start + 1
		for end < total && full[end]&0xC0 == 0x80 {
			end++
		}
	}
	return BytePage{Data: full[start:end], Offset: start, Next: end, Total: total, More: end < total}, nil
}

// runeStart moves i back to the start of the UTF-8 sequence it is in.
func runeStart(full []byte, i int) int {
	for i > 0 && i < len(full) && full[i]&0xC0 == 0x80 {
		i--
	}
	return i
}

// valueAround returns the start and end of the value the detectors find
// across position i of full (start < i < end), or i and i when i cuts
// none.
func valueAround(full []byte, i int) (start, end int) {
	if i <= 0 || i >= len(full) {
		return i, i
	}
	lo, hi := runeStart(full, max(0, i-pageTextMargin)), runeStart(full, min(len(full), i+pageTextMargin))
	for _, m := range ScanString(string(full[lo:hi])) {
		if lo+m.Start < i && i < lo+m.End {
			return lo + m.Start, lo + m.End
		}
	}
	return i, i
}
