package sessions

// SetHook sets a function run at named steps of Compact ("locked",
// "prepared", "staged", "committed", "published"); an error it returns
// fails the attempt at that step.
func SetHook(m *Manager, hook func(step string) error) { m.hook = hook }
