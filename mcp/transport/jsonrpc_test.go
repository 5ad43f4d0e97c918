package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestReadLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 100)
	cases := []struct {
		name     string
		in       string
		max      int
		keep     int
		wantLine string
		wantNil  bool
		wantSize int
	}{
		{"short", "abc\nrest", 10, 20, "abc", false, 3},
		{"crlf", "abc\r\n", 10, 20, "abc", false, 3},
		{"no newline at EOF", "abc", 10, 20, "abc", false, 3},
		{"over max, kept", long + "\n", 10, 200, long, false, 100},
		{"over keep", long + "\n", 10, 50, "", true, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := bufio.NewReaderSize(strings.NewReader(c.in), 16)
			line, size, _ := readLine(r, c.max, c.keep)
			if size != c.wantSize {
				t.Errorf("size %d, want %d", size, c.wantSize)
			}
			if c.wantNil {
				if line != nil {
					t.Errorf("line %q, want nil", line)
				}
				return
			}
			if string(line) != c.wantLine {
				t.Errorf("line %q, want %q", line, c.wantLine)
			}
		})
	}
}

func TestErrorLine(t *testing.T) {
	t.Parallel()
	b := errorLine(json.RawMessage(`"a"`), -32600, "bad")
	var m struct {
		ID    json.RawMessage     `json:"id"`
		Error *struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != `"a"` || m.Error == nil || m.Error.Code != -32600 || !bytes.Contains(b, []byte(`"jsonrpc":"2.0"`)) {
		t.Fatalf("errorLine = %s", b)
	}
}
