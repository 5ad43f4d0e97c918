package workflows_test

import (
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/workflows"
)

func Example() {
	src := []byte(`
input:
  type: object
  properties:
    who: {type: string, default: world}
steps:
  - id: greet
    exec: ["echo", "hello ${{ input.who }}!"]
  - id: shout
    if: ${{ input.who != "world" }}
    shell: "echo ${{ shellQuote(upper(input.who)) }}"
result: ${{ len(steps.greet.stdout) }}
`)
	w, err := workflows.Parse("greet.yaml", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	in, err := w.ValidateInput(json.RawMessage(`{}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	env := workflows.Env{Input: in, Steps: map[string]workflows.StepResult{}}
	arg, _ := w.Steps[0].Exec[1].Render(env)
	run, _ := w.Steps[1].If.EvalBool(env)
	env.Steps["greet"] = workflows.StepResult{Status: "succeeded", Stdout: "hello world!\n"}
	result, _ := w.Result.Eval(env)
	fmt.Println(w.Name, arg, run, result)

	_, err = w.ValidateInput(json.RawMessage(`{"who": 42}`))
	fmt.Println(err)

	_, err = workflows.Parse("greet.yaml", []byte("steps:\n  - id: x\n    exec: [a]\n    shell: b\n"))
	fmt.Println(err)
	// Output:
	// greet hello world! false 13
	// input: /who: expected string, got number
	// greet.yaml:4: step "x" has both exec and shell; choose one
}
