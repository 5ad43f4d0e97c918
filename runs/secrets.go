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
	vals, err := x.redactSecretsOf(st)
	x.secrets = vals
	return err
}

// redactSecretsOf reads the secrets step st names and redacts their
// values from everything the run records from now on; it returns them.
// An owner that takes the result of a call an earlier owner dispatched
// (re-attaching to its supervisor) calls it too: the call's output and
// error are the step's, and must reach the ledger as dispatch would have
// recorded them.
func (x *execution) redactSecretsOf(st *workflows.Step) (map[string]string, error) {
	names := st.Secrets()
	if len(names) == 0 {
		return nil, nil
	}
	vals, err := x.e.secrets.Get(names)
	if err != nil {
		return nil, fmt.Errorf("resolve secrets: %w", err)
	}
	for _, v := range vals {
		x.redact.add(v)
	}
	return vals, nil
}

func (x *execution) clearSecrets() { x.secrets = nil }

// redactValues are the secret values the execution redacts: a step
// supervisor writing journal lines itself replaces them with "***".
func (x *execution) redactValues() []string { return x.redact.values() }
