package transport

import "bufio"

type lineResult struct {
	line []byte
	size int
	err  error
}

// readLine reads up to and excluding the next '\n'. It returns the line
// when it is at most max bytes; a longer line is returned truncated to
// keep bytes (or nil past keep) with size set to its full length, so the
// caller can tell and refuse it without holding an unbounded buffer.
func readLine(r *bufio.Reader, max, keep int) (line []byte, size int, err error) {
	var last, beforeLast byte
	for {
		chunk, e := r.ReadSlice('\n')
		size += len(chunk)
		if n := len(chunk); n > 0 {
			beforeLast, last = last, chunk[n-1]
			if n > 1 {
				beforeLast = chunk[n-2]
			}
		}
		if size <= keep {
			line = append(line, chunk...)
		} else if line != nil {
			line = nil // too long even to find its id: drop what we kept
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		err = e
		break
	}
	if size > 0 && last == '\n' {
		size--
		if size > 0 && beforeLast == '\r' {
			size--
		}
	}
	if line != nil {
		line = line[:size]
	}
	return line, size, err
}
