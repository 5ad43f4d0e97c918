package runs

import (
	"fmt"

	"github.com/cairnhq/cairn/workflows"
)

// SecretSource gives the values of named secrets; an unknown name is an
// error saying how to set it. *secrets.Store is one.
type SecretSource interface {
	Get(names []string) (map[string]string, error)
}

// resolveSecrets reads the secrets step st names, for its templates to
// render (x.env), and redacts their values from everything the run records
// from now on. clearSecrets drops them once the step is dispatched.
func (x *execution) resolveSecrets(st *workflows.Step) error {
	names := st.Secrets()
	if len(names) == 0 {
		return nil
	}
	vals, err := x.e.secrets.Get(names)
	if err != nil {
		return fmt.Errorf("resolve secrets: %w", err)
	}
	for _, v := range vals {
		x.redact.add(v)
	}
	x.secrets = vals
	return nil
}

func (x *execution) clearSecrets() { x.secrets = nil }

// redactValues are the secret values the execution redacts: a step
// supervisor writing journal lines itself replaces them with "***".
func (x *execution) redactValues() []string { return x.redact.values() }
