package page

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

type item struct {
	Key  string `json:"key"`
	Text string `json:"text"`
}

// items are sorted by key, of sizes from a few bytes to a few KiB.
func items(n int) []item {
	out := make([]item, n)
	for i := range out {
		out[i] = item{Key: fmt.Sprintf("k%05d", i), Text: strings.Repeat("<é\"", (i*37)%500)}
	}
	return out
}

func TestSliceAndFillReassembleUnderBudget(t *testing.T) {
	t.Parallel()
	all := items(500)
	key := func(it item) string { return it.Key }
	what := func(it item) string { return "item " + it.Key }
	for _, budget := range []int{0, MinBytes, 20 << 10, MaxBytes} {
		room := Room(budget)
		// Slice over a list held whole.
		var got []item
		for cursor, pages := "", 0; ; pages++ {
			pg, next, err := Slice(all, key, cursor, 100, room, what)
			if err != nil {
				t.Fatal(err)
			}
			if n, used, _ := Fit(pg, room); n != len(pg) || used > room {
				t.Fatalf("budget %d: a page of %d takes %d bytes, room %d", budget, len(pg), used, room)
			}
			got = append(got, pg...)
			if next == "" {
				break
			}
			cursor = next
		}
		if fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("budget %d: Slice pages do not reassemble the list (%d of %d)", budget, len(got), len(all))
		}
		// Fill over a fetch that continues after an index cursor.
		got = got[:0]
		at := 0
		for {
			pg, next, err := Fill(100, room, func(limit int) ([]item, string, error) {
				end := min(at+limit, len(all))
				return all[at:end], fmt.Sprint(end), nil
			}, what)
			if err != nil {
				t.Fatal(err)
			}
			if _, used, _ := Fit(pg, room); used > room {
				t.Fatalf("budget %d: Fill page takes %d bytes, room %d", budget, used, room)
			}
			got = append(got, pg...)
			fmt.Sscan(next, &at)
			if at == len(all) {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("budget %d: Fill pages do not reassemble the list", budget)
		}
	}
}

func TestTooLargeItem(t *testing.T) {
	t.Parallel()
	big := []item{{Key: "a", Text: strings.Repeat("x", 2*MinBytes)}}
	_, _, err := Slice(big, func(it item) string { return it.Key }, "", 10, Room(MinBytes), func(it item) string { return "item " + it.Key })
	var tl *TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "item a takes") || !strings.Contains(err.Error(), "max_bytes") {
		t.Fatalf("err = %v", err)
	}
	tl.Arg = "--max-bytes"
	if !strings.Contains(tl.Error(), "pass a larger --max-bytes") {
		t.Fatalf("err = %v", tl)
	}
}

func TestCutJSONString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain text", "<<<&&&", "é\t\"\\x", "a\xffb"} {
		for room := 0; room < 40; room++ {
			cut := CutJSONString(s, room)
			if !strings.HasPrefix(s, cut) || JSONLen(cut)-2 > room {
				t.Fatalf("CutJSONString(%q, %d) = %q (%d bytes of JSON)", s, room, cut, JSONLen(cut)-2)
			}
		}
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{0: DefaultBytes, -1: DefaultBytes, 1: MinBytes, 100 << 10: 100 << 10, 1 << 30: MaxBytes} {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%d) = %d, want %d", in, got, want)
		}
	}
}
