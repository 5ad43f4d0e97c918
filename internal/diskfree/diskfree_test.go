package diskfree

import (
	"errors"
	"strings"
	"testing"
)

func space(free, total uint64) Func {
	return func(string) (Space, error) { return Space{Free: free, Total: total}, nil }
}

func TestGuard(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	cases := map[string]struct {
		g       Guard
		refused bool
	}{
		"big disk, plenty free":       {g: Guard{Measure: space(10_000*mb, 100_000*mb)}},
		"big disk, under 200 MB":      {g: Guard{Measure: space(150*mb, 100_000*mb)}, refused: true},
		"big disk, 1% free is enough": {g: Guard{Measure: space(300*mb, 100_000*mb)}},
		"small disk, over 1%":         {g: Guard{Measure: space(20*mb, 1000*mb)}},
		"small disk, under 1%":        {g: Guard{Measure: space(5*mb, 1000*mb)}, refused: true},
		"tiny disk":                   {g: Guard{Measure: space(10<<10, 4000<<10)}, refused: true},
		"own threshold":               {g: Guard{MinFree: 500 * mb, Measure: space(400*mb, 100_000*mb)}, refused: true},
		"own percent, under":          {g: Guard{MinFreePercent: 5, Measure: space(4_000*mb, 100_000*mb)}, refused: true},
		"own percent, over":           {g: Guard{MinFreePercent: 0.5, Measure: space(600*mb, 100_000*mb)}},
		"bytes win over a percent":    {g: Guard{MinFree: 100 * mb, MinFreePercent: 50, Measure: space(200*mb, 1000*mb)}},
		"unmeasurable is not refused": {g: Guard{Measure: func(string) (Space, error) { return Space{}, errors.New("no") }}},
		"the real disk of a temp dir": {g: Guard{MinFree: 1}},
		"no path checks nothing":      {g: Guard{Measure: space(0, 1)}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name != "no path checks nothing" {
				c.g.Path = t.TempDir()
			}
			err := c.g.Check()
			if c.refused != (err != nil) {
				t.Fatalf("Check() = %v, refused want %v", err, c.refused)
			}
			if err != nil && (!errors.Is(err, ErrLow) || !strings.Contains(err.Error(), "B free")) {
				t.Errorf("err = %v, want ErrLow naming the free MB", err)
			}
			if name == "tiny disk" && (err == nil || !strings.Contains(err.Error(), "has 10 KB free (under 40 KB,")) {
				t.Errorf("err = %v, want it in KB", err)
			}
		})
	}
}

func TestStatfsMeasuresTheDisk(t *testing.T) {
	t.Parallel()
	sp, err := Statfs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if sp.Total == 0 || sp.Free > sp.Total {
		t.Errorf("Statfs = %+v, want a total over 0 and free under it", sp)
	}
}
