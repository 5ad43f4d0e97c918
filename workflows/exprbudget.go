package workflows

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Limits of one evaluation (one expression, or every expression of one
// template render). They are checked before the memory is allocated, so
// `repeat("x", 1e9)` or `1..1e9` is refused without building it.
const (
	// MaxExprBytes caps the bytes of strings an evaluation builds with
	// repeat, join, replace and `+`.
	MaxExprBytes = 1 << 20
	// MaxExprElements caps the elements an evaluation builds or walks
	// (ranges, array and map literals, map/filter over a list).
	MaxExprElements = 100_000
)

// budgetName is the hidden environment field through which the checked
// string functions share one evaluation's byte budget.
const budgetName = "_cairnBudget"

// exprBudget is what one evaluation may still build: bytes of strings,
// and elements of the lists split makes (the VM counts its own). A render
// uses it from one goroutine only.
type exprBudget struct{ left, elements int }

func newExprBudget() *exprBudget {
	return &exprBudget{left: MaxExprBytes, elements: MaxExprElements}
}

// take reserves n bytes for what would be built, or refuses before it is.
func (b *exprBudget) take(what string, n int) error {
	if n < 0 || n > b.left {
		return fmt.Errorf("%s would build %d bytes, over the expression limit of %d bytes (1 MiB)", what, n, MaxExprBytes)
	}
	b.left -= n
	return nil
}

// takeElements reserves n list elements, or refuses before they are made.
func (b *exprBudget) takeElements(what string, n int) error {
	if n < 0 || n > b.elements {
		return fmt.Errorf("%s would build %d elements, over the expression limit of %d", what, n, MaxExprElements)
	}
	b.elements -= n
	return nil
}

// runProgram runs prog with the element limit.
func runProgram(prog *vm.Program, env exprEnv) (any, error) {
	machine := vm.VM{MemoryBudget: MaxExprElements}
	return machine.Run(prog, env)
}

// budgetOptions replaces the string functions that can grow without bound
// (and `+` on strings) with checked ones.
func budgetOptions() []expr.Option {
	return []expr.Option{
		expr.Patch(budgetPatch{}),
		expr.Function("repeat", checkedRepeat,
			new(func(string, int, *exprBudget) string),
			new(func(string, float64, *exprBudget) string)),
		expr.Function("join", checkedJoin,
			new(func([]any, string, *exprBudget) string),
			new(func([]any, *exprBudget) string),
			new(func([]string, string, *exprBudget) string),
			new(func([]string, *exprBudget) string)),
		expr.Function("replace", checkedReplace,
			new(func(string, string, string, *exprBudget) string),
			new(func(string, string, string, int, *exprBudget) string)),
		expr.Function("split", checkedSplit(strings.SplitN),
			new(func(string, string, *exprBudget) []string),
			new(func(string, string, int, *exprBudget) []string)),
		expr.Function("splitAfter", checkedSplit(strings.SplitAfterN),
			new(func(string, string, *exprBudget) []string),
			new(func(string, string, int, *exprBudget) []string)),
		expr.Function("_cairnConcat", checkedConcat, new(func(string, string, *exprBudget) string)),
		expr.Function("_cairnAdd", checkedAdd, new(func(any, any, *exprBudget) any)),
	}
}

// budgetPatch passes the budget to the checked functions and turns `+`
// that may join strings into a checked call.
type budgetPatch struct{}

var budgeted = map[string]bool{"repeat": true, "join": true, "replace": true, "split": true, "splitAfter": true}

func (budgetPatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok || !budgeted[id.Value] || hasBudgetArg(n.Arguments) {
			return
		}
		n.Arguments = append(n.Arguments, &ast.IdentifierNode{Value: budgetName})
	case *ast.BinaryNode:
		if n.Operator != "+" {
			return
		}
		l, r := kindOf(n.Left), kindOf(n.Right)
		fn := ""
		switch {
		case l == reflect.String && r == reflect.String:
			fn = "_cairnConcat"
		case maybeString(l) && maybeString(r):
			fn = "_cairnAdd"
		default:
			return
		}
		ast.Patch(node, &ast.CallNode{
			Callee:    &ast.IdentifierNode{Value: fn},
			Arguments: []ast.Node{n.Left, n.Right, &ast.IdentifierNode{Value: budgetName}},
		})
	}
}

func hasBudgetArg(args []ast.Node) bool {
	if len(args) == 0 {
		return false
	}
	id, ok := args[len(args)-1].(*ast.IdentifierNode)
	return ok && id.Value == budgetName
}

// kindOf is the node's static kind, Interface when it is not known.
func kindOf(n ast.Node) reflect.Kind {
	t := n.Type()
	if t == nil {
		return reflect.Interface
	}
	return t.Kind()
}

// maybeString reports whether a value of kind k can be a string at run time.
func maybeString(k reflect.Kind) bool { return k == reflect.String || k == reflect.Interface }

func budgetArg(params []any) *exprBudget {
	b, _ := params[len(params)-1].(*exprBudget)
	if b == nil {
		return newExprBudget()
	}
	return b
}

func checkedRepeat(params ...any) (any, error) {
	s, _ := params[0].(string)
	n := runtime.ToInt(params[1])
	if n < 0 {
		return nil, fmt.Errorf("invalid argument for repeat (expected positive integer, got %d)", n)
	}
	if len(s) > 0 && n > MaxExprBytes/len(s)+1 {
		return nil, budgetArg(params).take("repeat", MaxExprBytes+1)
	}
	if err := budgetArg(params).take("repeat", len(s)*n); err != nil {
		return nil, err
	}
	return strings.Repeat(s, n), nil
}

func checkedJoin(params ...any) (any, error) {
	b := budgetArg(params)
	glue := ""
	if len(params) == 3 {
		glue, _ = params[1].(string)
	}
	var parts []string
	switch list := params[0].(type) {
	case []string:
		parts = list
	case []any:
		parts = make([]string, len(list))
		for i, v := range list {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("invalid argument for join (element %d is %s)", i, typeName(v))
			}
			parts[i] = s
		}
	default:
		return nil, fmt.Errorf("invalid argument for join (type %s)", typeName(params[0]))
	}
	size := len(glue) * max(len(parts)-1, 0)
	for _, p := range parts {
		size += len(p)
		if size > MaxExprBytes {
			break
		}
	}
	if err := b.take("join", size); err != nil {
		return nil, err
	}
	return strings.Join(parts, glue), nil
}

func checkedReplace(params ...any) (any, error) {
	s, _ := params[0].(string)
	old, _ := params[1].(string)
	repl, _ := params[2].(string)
	limit := -1
	if len(params) == 5 {
		limit = runtime.ToInt(params[3])
	}
	if grow := len(repl) - len(old); grow > 0 {
		n := strings.Count(s, old)
		if limit >= 0 {
			n = min(n, limit)
		}
		if n > 0 && n > (MaxExprBytes-len(s))/grow {
			return nil, budgetArg(params).take("replace", MaxExprBytes+1)
		}
		if err := budgetArg(params).take("replace", len(s)+n*grow); err != nil {
			return nil, err
		}
	}
	return strings.Replace(s, old, repl, limit), nil
}

// checkedSplit is split or splitAfter (split as strings.SplitN or
// strings.SplitAfterN), refused when it would make too many elements.
func checkedSplit(split func(s, sep string, n int) []string) func(params ...any) (any, error) {
	return func(params ...any) (any, error) {
		s, _ := params[0].(string)
		sep, _ := params[1].(string)
		limit := -1
		if len(params) == 4 {
			limit = runtime.ToInt(params[2])
		}
		n := strings.Count(s, sep) + 1 // one or two over for sep ""
		if limit >= 0 {
			n = min(n, limit)
		}
		if err := budgetArg(params).takeElements("split", n); err != nil {
			return nil, err
		}
		return split(s, sep, limit), nil
	}
}

func checkedConcat(params ...any) (any, error) {
	a, _ := params[0].(string)
	c, _ := params[1].(string)
	if err := budgetArg(params).take("+", len(a)+len(c)); err != nil {
		return nil, err
	}
	return a + c, nil
}

func checkedAdd(params ...any) (any, error) {
	a, aok := params[0].(string)
	c, cok := params[1].(string)
	if aok && cok {
		return checkedConcat(a, c, params[2])
	}
	return runtime.Add(params[0], params[1]), nil
}
