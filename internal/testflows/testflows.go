// Package testflows holds workflow files that tests of several packages
// run, so that each is written once.
package testflows

import _ "embed"

// Hello greets ${{ input.who }} (default world), asks "Go on, <who>?"
// (yes or no), on yes appends "<answer> from <greeting>" to out.txt, naps
// 10ms and returns the greeting.
//
//go:embed hello.yaml
var Hello string
