package text

import (
	"fmt"
	"testing"
)

func TestShorten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"empty", "", 5, ""},
		{"shorter", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"longer", "abcdef", 5, "abcde…"},
		{"multibyte kept whole", "résumé ✓ 要約", 8, "résumé ✓…"},
		{"multibyte exact", "要約", 2, "要約"},
		{"multibyte cut", "要約です", 2, "要約…"},
		{"zero", "abc", 0, "…"},
		{"zero of empty", "", 0, ""},
		{"negative", "abc", -1, "…"},
		{"invalid UTF-8 counts per byte", "\xff\xfeab", 2, "\xff\xfe…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Shorten(tc.in, tc.n); got != tc.want {
				t.Fatalf("Shorten(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"plain", "a b", 10, "a b"},
		{"newlines and tabs", " a\n\tb  c \n", 10, "a b c"},
		{"collapsed then cut", "a\n\n\nbcdef", 4, "a bc…"},
		{"only space", " \n\t", 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := OneLine(tc.in, tc.n); got != tc.want {
				t.Fatalf("OneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}

func ExampleShorten() {
	fmt.Println(Shorten("nightly-report-for-the-whole-team", 14))
	fmt.Println(Shorten("要約です", 2))
	// Output:
	// nightly-report…
	// 要約…
}
