// Package display holds the one sanitiser for text permwrap shows a
// person: the denial notice, the prompt, the review log's text view and
// explain all pass request values, process names and rule patterns
// through Printable before they reach a terminal.
//
// It is a leaf: pure Go, no other permwrap package, so engine, authority,
// supervisor and cmd can all use it.
package display

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable escapes everything in s that could act on a terminal instead
// of being shown: C0 and C1 control characters (ESC, BEL, CSI 0x9b, ...),
// DEL, format characters (bidi overrides and isolates, zero-width joiners,
// the BOM), U+FFFD and bytes that are not UTF-8. Escapes are written the
// way Go quotes them (\x1b, \u202e), so what a person reads is what the
// string holds. Text with nothing to escape is returned as is.
func Printable(s string) string {
	clean := true
	for _, c := range s {
		if Hidden(c) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1: // a byte that is not UTF-8
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case c == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case Hidden(c):
			q := strconv.QuoteRuneToASCII(c)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(c)
		}
		i += size
	}
	return b.String()
}

// Hidden reports whether c is escaped by Printable: a control character
// (C0, DEL, C1), a format character (Cf: bidi controls, zero-width
// characters), or U+FFFD (which a broken byte decodes to).
func Hidden(c rune) bool {
	return c == unicode.ReplacementChar || unicode.IsControl(c) || unicode.Is(unicode.Cf, c)
}
