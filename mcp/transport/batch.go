package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// batchVersion is the only protocol version with JSON-RPC batches: added
// in 2025-03-26, removed in 2025-06-18.
const batchVersion = mcpgo.ProtocolVersion20250326

// maxBatch bounds the messages of one batch.
const maxBatch = 100

// isBatch reports whether a trimmed message is a JSON array.
func isBatch(msg []byte) bool { return len(msg) > 0 && msg[0] == '[' }

// splitBatch parses a batch sent by a client that negotiated version, or
// returns the error refusing it.
func splitBatch(msg []byte, version string) ([]json.RawMessage, *rpcError) {
	null := json.RawMessage("null")
	var elems []json.RawMessage
	if err := json.Unmarshal(msg, &elems); err != nil {
		return nil, &rpcError{null, mcpgo.PARSE_ERROR, "Parse error: the batch is not valid JSON: " + jsonErrorText(err)}
	}
	switch {
	case version != batchVersion:
		if version == "" {
			version = "none yet (initialize first)"
		}
		return nil, &rpcError{null, mcpgo.INVALID_REQUEST, fmt.Sprintf("Invalid Request: batches are part of protocol version %s only; this session's version is %s: send one message at a time", batchVersion, version)}
	case len(elems) == 0:
		return nil, &rpcError{null, mcpgo.INVALID_REQUEST, "Invalid Request: an empty batch"}
	case len(elems) > maxBatch:
		return nil, &rpcError{null, mcpgo.INVALID_REQUEST, fmt.Sprintf("Invalid Request: a batch of %d messages exceeds the limit of %d; send smaller batches", len(elems), maxBatch)}
	}
	return elems, nil
}

// parseElement parses one message of a batch, refusing an initialize
// (the spec forbids it inside a batch).
func parseElement(msg []byte) (head, *rpcError) {
	h, rerr := parseHead(msg, "message")
	if rerr != nil || h.Method != string(mcpgo.MethodInitialize) {
		return h, rerr
	}
	id := h.ID
	if !validID(id) {
		id = json.RawMessage("null")
	}
	return h, &rpcError{id, mcpgo.INVALID_REQUEST, "Invalid Request: initialize must not be part of a batch"}
}

// serveBatch runs one on every element at once and returns the JSON array
// of their answers (nil ones left out), or nil when there are none.
func serveBatch(elems []json.RawMessage, one func(msg []byte) []byte) []byte {
	answers := make([][]byte, len(elems))
	var wg sync.WaitGroup
	for i, el := range elems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = one(bytes.TrimSpace(el))
		}()
	}
	wg.Wait()
	var out [][]byte
	for _, a := range answers {
		if a != nil {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return append(append([]byte{'['}, bytes.Join(out, []byte{','})...), ']')
}

// encodeAnswer turns HandleMessage's answer into bytes (nil for none).
func encodeAnswer(resp any) ([]byte, error) {
	if resp == nil {
		return nil, nil
	}
	if b, ok := resp.(rawLine); ok {
		return b, nil
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return b, nil
}
