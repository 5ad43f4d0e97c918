package workflows

import (
	"bytes"
	_ "embed"
)

//go:embed starter/hello.yaml
var starter []byte

// StarterFile is the file name `mcp-host init` gives the starter workflow
// inside .cairn/workflows/.
const StarterFile = "hello.yaml"

// Starter returns the content of the starter workflow that `mcp-host init`
// writes (never over an existing file). It parses as the workflow "hello".
func Starter() []byte { return bytes.Clone(starter) }
