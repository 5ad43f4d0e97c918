package page

import "unicode/utf8"

// CutJSONString returns the longest prefix of s, cut at a rune boundary,
// whose JSON string encoding takes at most room bytes (quotes excluded).
func CutJSONString(s string, room int) string {
	used := 0
	for i, r := range s {
		w := jsonRuneLen(r, s[i:])
		if used+w > room {
			return s[:i]
		}
		used += w
	}
	return s
}

// jsonRuneLen is how many bytes encoding/json writes for rune r (which
// starts rest), HTML escaping included.
func jsonRuneLen(r rune, rest string) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	case r == utf8.RuneError:
		if _, n := utf8.DecodeRuneInString(rest); n == 1 {
			return 6 // an invalid byte becomes \ufffd
		}
	}
	return utf8.RuneLen(r)
}
