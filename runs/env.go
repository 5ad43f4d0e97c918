package runs

import (
	"maps"
	"os"
	"slices"
)

// envAllowlist are the variables a run captures from the environment of
// the process that launches it, with the names Options.EnvPass adds;
// everything else a step sees comes from its env.
var envAllowlist = []string{"PATH", "HOME", "LANG", "TZ"}

// defaultPATH is a step's PATH when the launching process had none.
const defaultPATH = "/usr/local/bin:/usr/bin:/bin"

// CaptureEnv returns the environment a run launched now keeps for all its
// steps: the allowlisted variables (PATH, HOME, LANG, TZ) and those named
// in pass, as this process has them (unset ones are left out).
func CaptureEnv(pass []string) map[string]string {
	vars := map[string]string{}
	for _, k := range slices.Concat(envAllowlist, pass) {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	return vars
}

// runEnv is the environment the run captured at launch; a run stored
// before runs kept one gets this process's, as it did then.
func (x *execution) runEnv() map[string]string {
	if x.launchEnv != nil {
		return x.launchEnv
	}
	return CaptureEnv(x.e.opts.EnvPass)
}

// stepEnv builds a step's environment: the run's, then the step's own.
func (x *execution) stepEnv(extra map[string]string) []string {
	vars := maps.Clone(x.runEnv())
	if vars == nil {
		vars = map[string]string{}
	}
	if _, ok := vars["PATH"]; !ok {
		vars["PATH"] = defaultPATH
	}
	maps.Copy(vars, extra)
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}
