package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// errorLine encodes a JSON-RPC error response.
func errorLine(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return b
}

// extractID finds the id of an oversized message, if it is a valid one.
func extractID(line []byte) json.RawMessage {
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &head) != nil || !validID(head.ID) {
		return json.RawMessage("null")
	}
	return head.ID
}

// validID reports whether a raw JSON-RPC id is a string or a number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// rawLine is a pre-encoded message.
type rawLine []byte

// head is the part of a JSON-RPC message that routes it.
type head struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
}

// hasID reports whether the message carries an id (a request, or a
// response to one of ours).
func (h head) hasID() bool { return len(h.ID) > 0 && !bytes.Equal(h.ID, []byte("null")) }

// parseHead reads a message's head. A message that is not one JSON object
// gets the code and text of the JSON-RPC error that refuses it; what names
// the message in that text ("line", "body").
func parseHead(msg []byte, what string) (h head, code int, text string) {
	if err := json.Unmarshal(msg, &h); err != nil {
		if json.Valid(msg) {
			return h, mcpgo.INVALID_REQUEST, "Invalid Request: a message must be one JSON object (batches are not supported)"
		}
		return h, mcpgo.PARSE_ERROR, "Parse error: the " + what + " is not valid JSON: " + jsonErrorText(err)
	}
	return h, 0, ""
}

// badIDText refuses a request whose id is neither a string nor a number.
const badIDText = "Invalid Request: id must be a string or a number"
