package storetest

import "testing"

func testRuns(t *testing.T, newStore NewFunc) {}
