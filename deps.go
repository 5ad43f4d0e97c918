//go:build tools

package cairn

import (
	_ "github.com/expr-lang/expr"
	_ "github.com/gofrs/flock"
	_ "github.com/mark3labs/mcp-go/server"
	_ "github.com/robfig/cron/v3"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/spf13/cobra"
	_ "go.uber.org/goleak"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
