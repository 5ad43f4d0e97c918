//go:build unix

package transport

import (
	"fmt"
	"os"
	"syscall"
)

// RedirectStdout keeps the protocol stream safe from stray writes: it
// duplicates file descriptor 1 to a new descriptor (close-on-exec) and
// returns it as the file the transport writes to, then points descriptor 1
// at standard error. Afterwards anything printed to os.Stdout (a library's
// debug line, a panic handler, a child process that inherits fd 1) lands
// on stderr instead of corrupting the JSON-RPC stream.
//
// It changes process-wide state: call it once, from the serve command.
func RedirectStdout() (*os.File, error) {
	syscall.ForkLock.RLock()
	fd, err := syscall.Dup(1)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("duplicate stdout: %w", err)
	}
	if err := dup2(2, 1); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("point stdout at stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "mcp-protocol-stdout"), nil
}
