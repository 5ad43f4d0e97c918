package locks_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairnhq/cairn/locks"
)

func Example() {
	state, _ := os.MkdirTemp("", "cairn")
	defer os.RemoveAll(state)
	dir := filepath.Join(state, "locks")

	l, err := locks.TryLock(dir, "schedule:nightly")
	if err != nil {
		fmt.Println(err)
		return
	}
	// A second TryLock, here or in another process, is refused with a
	// *HeldError naming the holder ("schedule:nightly is held by pid N
	// (since T)").
	_, err = locks.TryLock(dir, "schedule:nightly")
	var held *locks.HeldError
	if errors.As(err, &held) {
		fmt.Println("refused; holder is this process:", held.Holder.PID == os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		fmt.Println(err)
	}
	_, isHeld, _ := locks.Describe(dir, "schedule:nightly")
	fmt.Println("held after Unlock:", isHeld)
	// Output:
	// refused; holder is this process: true
	// held after Unlock: false
}
