package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// maxResourceRecords bounds how many journal records a read of the output
// resource returns (the first ones); read_run_output pages through all.
const maxResourceRecords = 1000

// resourceRoom is what the output resource's records may take: the JSON
// Lines are sent as a JSON string, which at most doubles them, and the
// reply stays under DefaultReplyBytes.
const resourceRoom = (DefaultReplyBytes - replyReserve) / 2

func (s *Server) addResources() {
	s.mcp.AddResourceTemplate(
		mcpgo.NewResourceTemplate("cairn://runs/{run_id}", "run",
			mcpgo.WithTemplateTitle("A run"),
			mcpgo.WithTemplateDescription("A run as JSON (the same object get_run returns, its largest fields cut past about 32 KiB: cut lists them). Subscribe to be told when its status or record changes, whichever process changed it."),
			mcpgo.WithTemplateMIMEType("application/json"),
		),
		s.readRunResource)
	s.mcp.AddResourceTemplate(
		mcpgo.NewResourceTemplate("cairn://runs/{run_id}/output", "run-output",
			mcpgo.WithTemplateTitle("A run's output journal"),
			mcpgo.WithTemplateDescription("A run's output journal as JSON Lines, one record per line: the first ones, up to 1000 records or about 32 KiB (a longer record is cut, with its piece field set); read_run_output pages through all. Subscribe to be told when records are added."),
			mcpgo.WithTemplateMIMEType("application/x-ndjson"),
		),
		s.readRunResource)
}

func (s *Server) readRunResource(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
	uri := req.Params.URI
	id, output, err := parseRunURI(uri)
	if err != nil {
		return nil, err
	}
	rs, err := s.runs()
	if err != nil {
		return nil, err
	}
	if !output {
		run, err := rs.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		// The text is sent as a JSON string: escaping may double it.
		b, err := json.MarshalIndent(fitRun(run, (DefaultReplyBytes-4*replyReserve)/2), "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode run %s: %w", id, err)
		}
		return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
	}
	page, err := readOutputPage(ctx, rs, outputRead{RunID: id, Limit: maxResourceRecords, Room: resourceRoom})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range page.Records {
		if err := enc.Encode(r); err != nil {
			return nil, fmt.Errorf("encode journal record of run %s: %w", id, err)
		}
	}
	return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: uri, MIMEType: "application/x-ndjson", Text: buf.String()}}, nil
}
