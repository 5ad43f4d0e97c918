package runs

import (
	"strings"
	"unicode/utf8"
)

// The bounds of Step.OutputTail.
const (
	OutputTailLines = 10
	OutputTailBytes = 2 << 10
)

// outputTail is the end of a call's recorded output: stdout then stderr
// (or an http body), its last OutputTailLines lines and OutputTailBytes
// bytes, cut at a character boundary.
func outputTail(rec stepRecord) string {
	out := rec.Stdout
	if rec.Stderr != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += rec.Stderr
	}
	if out == "" {
		out = rec.Body
	}
	out = strings.TrimRight(out, "\n")
	if len(out) > OutputTailBytes {
		out = out[len(out)-OutputTailBytes:]
		for len(out) > 0 && !utf8.RuneStart(out[0]) {
			out = out[1:]
		}
	}
	for n, i := 0, len(out); i > 0; {
		j := strings.LastIndexByte(out[:i], '\n')
		if j < 0 {
			break
		}
		if n++; n == OutputTailLines {
			out = out[j+1:]
			break
		}
		i = j
	}
	if !jsonSafe(out) {
		out = strings.ToValidUTF8(strings.ReplaceAll(out, "\x00", ""), "\uFFFD")
	}
	return out
}
