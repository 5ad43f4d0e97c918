package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/runs"
)

// A read of a run's output fills a page record by record until the next
// one would not fit in the budget. A record that alone does not fit is
// returned in pieces, one per page: the cursor of a piece is
// "<engine cursor>:<byte offset in the record>", so the pages together
// hold every byte of the journal, in order.

// outputRecord is a journal record, or a piece of one.
type outputRecord struct {
	runs.Record
	Piece *recordPiece `json:"piece,omitempty" jsonschema:"Set when the record was too large for one reply: this is a piece of it, and the next pages hold the rest."`
}

// recordPiece says which part of a split record a piece holds.
type recordPiece struct {
	Offset int  `json:"offset" jsonschema:"Byte offset of this piece's text in the whole."`
	Size   int  `json:"size" jsonschema:"Bytes of the whole: concatenate the pieces' text to get it."`
	JSON   bool `json:"json,omitempty" jsonschema:"True when the pieces' text is the record's JSON encoding (its other fields are too large), false when it is the record's text."`
}

// outputCursor is a position in a run's journal: the engine's cursor of a
// record, and a byte offset inside it when a reply stopped mid-record.
type outputCursor struct {
	engine string
	intra  int
}

func parseOutputCursor(c string) (outputCursor, error) {
	i := strings.LastIndexByte(c, ':')
	if i < 0 {
		return outputCursor{engine: c}, nil
	}
	n, err := strconv.Atoi(c[i+1:])
	if err != nil || n <= 0 {
		return outputCursor{}, &argumentError{Name: "cursor", Reason: "invalid cursor: pass back a next_cursor this tool returned"}
	}
	return outputCursor{engine: c[:i], intra: n}, nil
}

func (c outputCursor) String() string {
	if c.intra == 0 {
		return c.engine
	}
	return c.engine + ":" + strconv.Itoa(c.intra)
}

// outputRead is one page to read.
type outputRead struct {
	RunID  string
	Cursor string
	Limit  int // records at most
	Room   int // bytes of JSON the records may take
	Wait   time.Duration
}

// firstChunk is how many records the first engine read of a page asks
// for; each further read asks for twice as many, so a page of small
// records costs a few reads and one of huge records reads no more than it
// returns.
const firstChunk = 1

// readOutputPage reads a page of a run's output that fits in p.Room.
func readOutputPage(ctx context.Context, rs runEngine, p outputRead) (*outputPage, error) {
	cur, err := parseOutputCursor(p.Cursor)
	if err != nil {
		return nil, err
	}
	pg := &outputPage{RunID: p.RunID, Records: []outputRecord{}}
	room, chunk := p.Room, firstChunk
	if cur.intra > 0 {
		// The rest of a record a previous page split.
		out, err := rs.ReadOutput(ctx, p.RunID, runs.ReadParams{Cursor: cur.engine, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(out.Records) == 0 {
			return nil, &argumentError{Name: "cursor", Reason: "invalid cursor: no record there; pass back a next_cursor this tool returned"}
		}
		piece, rest, err := splitRecord(out.Records[0], cur.intra, room)
		if err != nil {
			return nil, err
		}
		pg.setStatus(out)
		pg.Records = append(pg.Records, piece)
		if rest > 0 {
			pg.NextCursor, pg.Done = outputCursor{engine: cur.engine, intra: rest}.String(), false
			return pg, nil
		}
		room -= page.JSONLen(piece) + 1
		cur = outputCursor{engine: out.Cursor}
		p.Limit--
	}
	wait := p.Wait
	for p.Limit > 0 {
		want := min(chunk, p.Limit)
		out, err := rs.ReadOutput(ctx, p.RunID, runs.ReadParams{Cursor: cur.engine, Limit: want, Wait: wait})
		if err != nil {
			return nil, err
		}
		wait = 0 // only the first read of a page waits for output
		n, used, err := page.Fit(out.Records, room)
		if err != nil {
			return nil, err
		}
		if n < len(out.Records) && n > 0 {
			// Read again as many as fit, for the cursor after them.
			if out, err = rs.ReadOutput(ctx, p.RunID, runs.ReadParams{Cursor: cur.engine, Limit: n}); err != nil {
				return nil, err
			}
		}
		if n == 0 && len(out.Records) > 0 {
			if len(pg.Records) > 0 {
				break // the next page starts with it
			}
			piece, rest, err := splitRecord(out.Records[0], 0, room)
			if err != nil {
				return nil, err
			}
			pg.setStatus(out)
			pg.Records = append(pg.Records, piece)
			pg.NextCursor, pg.Done = outputCursor{engine: cur.engine, intra: rest}.String(), false
			return pg, nil
		}
		pg.setStatus(out)
		for _, r := range out.Records[:min(n, len(out.Records))] {
			pg.Records = append(pg.Records, outputRecord{Record: r})
		}
		cur, room, p.Limit = outputCursor{engine: out.Cursor}, room-used, p.Limit-len(out.Records)
		if out.Done || len(out.Records) < want {
			break // the end of the journal, for now, or of the page
		}
		chunk *= 2
	}
	pg.NextCursor = cur.String()
	return pg, nil
}

// setStatus copies what the engine said of the run into the page.
func (p *outputPage) setStatus(o *runs.Output) {
	p.Done, p.Status, p.OwnerGone = o.Done, o.Status, o.OwnerGone
}

// splitRecord returns the piece of r that starts at byte from and fits in
// room, and where the next piece starts (0: this piece ends the record).
// The record's text is split when its other fields are small, else its
// JSON encoding.
func splitRecord(r runs.Record, from, room int) (outputRecord, int, error) {
	whole := r.Text
	head := r
	head.Text = ""
	piece := outputRecord{Record: head, Piece: &recordPiece{Offset: from, Size: len(whole)}}
	if page.JSONLen(piece)+64 > room/2 {
		b, err := json.Marshal(r)
		if err != nil {
			return outputRecord{}, 0, fmt.Errorf("encode journal record: %w", err)
		}
		whole = string(b)
		head = runs.Record{Time: r.Time, Type: r.Type, Run: r.Run, Step: r.Step, Attempt: r.Attempt}
		piece = outputRecord{Record: head, Piece: &recordPiece{Offset: from, Size: len(whole), JSON: true}}
	}
	if from >= len(whole) {
		return outputRecord{}, 0, &argumentError{Name: "cursor", Reason: "invalid cursor: past the record's end; pass back a next_cursor this tool returned"}
	}
	left := room - page.JSONLen(piece) - len(`,"text":""`)
	piece.Text = page.CutJSONString(whole[from:], left)
	if piece.Text == "" {
		return outputRecord{}, 0, &page.TooLargeError{What: "a journal record's header", Size: page.JSONLen(piece)}
	}
	next := from + len(piece.Text)
	if next >= len(whole) {
		next = 0
	}
	return piece, next, nil
}
