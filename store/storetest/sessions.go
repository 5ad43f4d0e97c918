package storetest

import "testing"

func testSessions(t *testing.T, newStore NewFunc) {}
