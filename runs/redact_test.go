package runs

import (
	"encoding/json"
	"testing"
)

func TestRedactor(t *testing.T) {
	t.Parallel()
	r := newRedactor([]string{"abc", "abcdef", `q"t`})
	for _, tc := range []struct{ in, want string }{
		{"x abcdef y abc", "x *** y ***"},
		{`err "q\"t"`, `err "***"`},
		{"nothing", "nothing"},
	} {
		if got := r.str(tc.in); got != tc.want {
			t.Errorf("str(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	raw, _ := json.Marshal(map[string]string{"k": `say q"t and abc`})
	if got := string(r.raw(raw)); got != `{"k":"say *** and ***"}` {
		t.Errorf("raw = %s", got)
	}
	rec := r.record(Record{Text: "abc", Error: "abcdef", Result: json.RawMessage(`"abc"`)})
	if rec.Text != "***" || rec.Error != "***" || string(rec.Result) != `"***"` {
		t.Errorf("record = %+v", rec)
	}
	var none *redactor
	if none.str("abc") != "abc" || none.values() != nil {
		t.Error("a nil redactor changes text")
	}
}
