package workflows

import (
	"runtime"
	"strings"
	"testing"
)

func TestExprBudgetAllowsSmallValues(t *testing.T) {
	t.Parallel()
	checkEval(t, []evalCase{
		{`${{ repeat("ab", 3) }}`, "ababab"},
		{`${{ join(input.tags, "-") }}`, "a-b"},
		{`${{ join(input.tags) }}`, "ab"},
		{`${{ replace("a.b.c", ".", "::") }}`, "a::b::c"},
		{`${{ replace("a.b.c", ".", "::", 1) }}`, "a::b.c"},
		{`${{ split("a,b,c", ",") }}`, []string{"a", "b", "c"}},
		{`${{ split("a,b,c", ",", 2) }}`, []string{"a", "b,c"}},
		{`${{ splitAfter("a,b", ",") }}`, []string{"a,", "b"}},
		{`${{ len(split(repeat("x", 1000000), ",")) }}`, 1},
		{`${{ "hello " + input.who }}`, "hello world"},
		{`${{ input.who + "!" }}`, "world!"},
		{`${{ input.n + 1 }}`, 4},
		{`${{ input.half + 1 }}`, 1.5},
		{`${{ 1 + 2 }}`, 3},
		{`${{ steps.greet.exit_code + 1 }}`, 1},
		{`${{ len(1..50000) }}`, 50000},
		{`${{ len(repeat("x", 1048576)) }}`, 1 << 20},
	}, evalTemplate)
}

func TestExprBudgetRefusesLargeValues(t *testing.T) {
	t.Parallel()
	const overBytes = wantErr("over the expression limit of 1048576 bytes (1 MiB)")
	checkEval(t, []evalCase{
		{`${{ repeat("x", 1e9) }}`, overBytes},
		{`${{ repeat("x", 1048577) }}`, overBytes},
		{`${{ repeat(repeat("x", 1000), 1000000) }}`, overBytes},
		{`${{ let a = repeat("x", 600000); a + a }}`, overBytes},
		{`${{ let a = repeat("x", 600000); input.who + a + a }}`, overBytes},
		{`${{ let a = repeat("x", 1000); join(map(1..2000, a)) }}`, overBytes},
		{`${{ replace(repeat("x", 1000), "x", repeat("y", 2000)) }}`, overBytes},
		{`${{ len(repeat("x", 600000)) + len(repeat("x", 600000)) }}`, overBytes},
		{`${{ split(repeat("x", 1000000), "") }}`, wantErr("over the expression limit of 100000")},
		{`${{ 1..1000000000 }}`, wantErr("memory budget exceeded")},
		{`${{ map(1..200000, #) }}`, wantErr("memory budget exceeded")},
	}, evalTemplate)
}

// TestExprBudgetRefusesBeforeAllocating checks that a refused repeat
// allocates next to nothing: the check runs before the string is built.
func TestExprBudgetRefusesBeforeAllocating(t *testing.T) {
	e, err := CompileExpr(`repeat("x", 1e9)`)
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := e.Eval(env); err == nil || !strings.Contains(err.Error(), "1 MiB") {
			t.Fatalf("err = %v, want the 1 MiB limit", err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("10 refused evaluations allocated %d bytes, want under 1 MiB", grew)
	}
}
