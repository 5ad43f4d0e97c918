//go:build !linux

package wake

import (
	"errors"
	"fmt"
)

func watchDir(dir string, _ bool, _ func([]string), _ func(error)) (dirImpl, error) {
	return nil, fmt.Errorf("watch %s: %w", dir, errors.ErrUnsupported)
}

func watchExit(pid int) (*Exit, error) {
	return nil, fmt.Errorf("watch process %d: %w", pid, errors.ErrUnsupported)
}
