package main

import (
	"context"
	"errors"
)

// oursPGThroughput is oursThroughput on store/postgres.
func oursPGThroughput(ctx context.Context, b *bench, dbURL string, p throughputParams) (float64, error) {
	return 0, errors.New("store/postgres is not on this branch yet (branch pgcore)")
}
