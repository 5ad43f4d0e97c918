package postgres_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
)

// Open a workspace's store in a shared database: the first host to open
// it creates its schema, cairn_build_box.
func ExampleOpen() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, postgres.Config{URL: "postgres://cairn@db.internal/cairn", WorkspaceID: "build-box"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	opCtx := store.WithOpID(ctx, "op_launch_1")
	if err := s.CreateRun(opCtx, &store.Run{ID: "run_1", Target: "nightly"}); err != nil {
		// After an error of unknown outcome, ask instead of retrying.
		o, _ := s.Outcome(ctx, "op_launch_1")
		fmt.Println("the launch was", o)
	}
}

func ExampleSchemaName() {
	name, _ := postgres.SchemaName("build-box")
	fmt.Println(name)
	_, err := postgres.SchemaName("Build Box")
	fmt.Println(err)
	// Output:
	// cairn_build_box
	// workspace id "Build Box": use 1 to 57 lowercase letters, digits, '-' or '_', starting with a letter or digit
}
