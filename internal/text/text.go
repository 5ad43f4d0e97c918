// Package text holds small helpers for showing untrusted or long strings
// in messages and listings.
package text

import "strings"

// Ellipsis marks where Shorten cut a string.
const Ellipsis = "…"

// Shorten returns s when it has at most n runes, else its first n runes
// followed by Ellipsis. It counts and cuts runes, never bytes, so a cut
// never splits a UTF-8 sequence. n <= 0 keeps nothing but the ellipsis
// (or "" for an empty s).
func Shorten(s string, n int) string {
	if n < 0 {
		n = 0
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos] + Ellipsis
		}
		i++
	}
	return s
}

// OneLine collapses every run of white space in s (newlines included) to
// one space, trims the ends, and shortens the result to n runes.
func OneLine(s string, n int) string {
	return Shorten(strings.Join(strings.Fields(s), " "), n)
}
