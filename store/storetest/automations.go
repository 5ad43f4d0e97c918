package storetest

import "testing"

func testAutomations(t *testing.T, newStore NewFunc) {}
