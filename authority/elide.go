package authority

import "unicode/utf8"

// elide caps s at max bytes, cutting on a rune boundary and marking the
// cut with "…" so a reader knows the value was longer.
func elide(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
