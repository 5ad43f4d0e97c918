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

// validID reports whether a raw JSON-RPC id is a string or an integer
// (MCP refuses null and fractional ids).
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
		if json.Unmarshal(id, &n) != nil {
			return false
		}
		_, err := n.Int64()
		return err == nil
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
	// ID is the raw id: nil when absent, "null" when null.
	ID json.RawMessage
	// Method is the method; HasMethod tells a request or notification
	// from a response.
	Method    string
	HasMethod bool
	// Params is the raw params, nil when absent.
	Params json.RawMessage
}

// hasID reports whether the message carries a non-null id (a request, or
// a response to one of ours).
func (h head) hasID() bool { return len(h.ID) > 0 && !bytes.Equal(h.ID, []byte("null")) }

// isRequest reports whether the message is a request (it expects an answer).
func (h head) isRequest() bool { return h.HasMethod && len(h.ID) > 0 }

// rpcError is a JSON-RPC error to answer a message with.
type rpcError struct {
	id   json.RawMessage // the request's id, or null
	code int
	text string
}

func (e *rpcError) line() []byte { return errorLine(e.id, e.code, e.text) }

// parseHead reads and checks a message's head: one JSON object whose
// method is a string, whose id (on a request) is a string or an integer,
// and whose params (on a request) are an object. A message that breaks a
// rule gets the JSON-RPC error that refuses it; what names the message in
// its text ("line", "body"). A notification with bad params is left to
// mcp-go, which answers nothing.
func parseHead(msg []byte, what string) (head, *rpcError) {
	var raw struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	null := json.RawMessage("null")
	if err := json.Unmarshal(msg, &raw); err != nil {
		if json.Valid(msg) {
			return head{}, &rpcError{null, mcpgo.INVALID_REQUEST, "Invalid Request: a message must be a JSON object"}
		}
		return head{}, &rpcError{null, mcpgo.PARSE_ERROR, "Parse error: the " + what + " is not valid JSON: " + jsonErrorText(err)}
	}
	h := head{ID: raw.ID, Params: raw.Params}
	answerID := null
	if validID(raw.ID) {
		answerID = raw.ID
	}
	if raw.Method == nil {
		if raw.Result == nil && raw.Error == nil {
			return h, &rpcError{answerID, mcpgo.INVALID_REQUEST, "Invalid Request: a message needs a method"}
		}
		return h, nil // a response to one of our requests
	}
	if err := json.Unmarshal(raw.Method, &h.Method); err != nil {
		return h, &rpcError{answerID, mcpgo.INVALID_REQUEST, "Invalid Request: method must be a string"}
	}
	h.HasMethod = true
	if len(raw.ID) == 0 {
		return h, nil // a notification
	}
	if !validID(raw.ID) {
		return h, &rpcError{null, mcpgo.INVALID_REQUEST, badIDText}
	}
	if p := bytes.TrimSpace(raw.Params); len(p) > 0 && p[0] != '{' && !bytes.Equal(p, null) {
		return h, &rpcError{raw.ID, mcpgo.INVALID_PARAMS, "Invalid params: params must be a JSON object"}
	}
	return h, nil
}

// badIDText refuses a request whose id is neither a string nor an integer.
const badIDText = "Invalid Request: id must be a string or an integer"
