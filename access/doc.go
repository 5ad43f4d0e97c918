// Package access says who does what and what agents may do: principals
// (a person, "human", or an agent, "agent:<client>") and the agents:
// policy of .cairn/config.yaml, a file of the user's that no tool writes.
//
// People are never limited here: every check passes for a principal that
// is not an agent. A refusal is a *RefusedError naming the policy key that
// would allow it, so the person reading the agent's error knows what to
// change.
package access
