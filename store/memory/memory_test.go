package memory

import (
	"testing"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return New() })
}
