package access

import (
	"strings"
)

// Principal is who makes a call: Human (the CLI, a person answering
// through elicitation, config) or an agent, "agent:<client name>".
type Principal string

// Human is every person: the CLI, an elicitation answer, the config file.
const Human Principal = "human"

// Owners that are not agents: automations they own are read-only to
// agents. OwnerLegacyCLI is the owner the CLI recorded before principals
// (a migration renames it; it still reads as human).
const (
	OwnerConfig    = "config"
	OwnerLegacyCLI = "cli"
)

// AgentPrefix starts every agent principal.
const AgentPrefix = "agent:"

// maxPrincipalLen bounds a principal, as ids are bounded.
const maxPrincipalLen = 128

// Agent is the principal of an MCP client named client: its name reduced
// to id characters ("Claude Code" is agent:Claude-Code); a client without
// a name is agent:unknown.
//
// Ownership goes by this name, not by connection: an automation an agent
// created stays its own after it reconnects (a new connection), and two
// clients with different names never touch each other's. The connection
// is recorded beside it in the audit trail.
func Agent(client string) Principal {
	return Principal(AgentPrefix + sanitize(client, maxPrincipalLen-len(AgentPrefix)))
}

// IsAgent reports whether p is an agent.
func (p Principal) IsAgent() bool { return strings.HasPrefix(string(p), AgentPrefix) }

// Of is the principal of a stored name (an owner, a run's launcher): empty
// and the legacy names of people are Human.
func Of(name string) Principal {
	switch {
	case name == "", name == OwnerLegacyCLI:
		return Human
	case strings.HasPrefix(name, "mcp:"): // owners recorded before principals
		return Principal(AgentPrefix + strings.TrimPrefix(name, "mcp:"))
	}
	return Principal(name)
}

// sanitize maps a name to id characters, runs of others to one dash.
func sanitize(name string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.'
		if ok {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= max {
			break
		}
	}
	out := strings.Trim(b.String(), "-.")
	out = strings.ReplaceAll(out, "..", ".")
	if out == "" {
		return "unknown"
	}
	return out
}
