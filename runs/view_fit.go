package runs

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn/internal/page"
)

// A run's view holds free-form fields (input, result, error, a question,
// step errors) that may be large; a reply that must stay under a byte
// budget cuts the largest of them, each with a marker, and lists them in
// Run.Cut with where the whole value is read.

// FieldCut says a field of a run was cut to fit a reply.
type FieldCut struct {
	Field string `json:"field" jsonschema:"The field cut: input, result, error, question.text or steps[N].error."`
	Bytes int    `json:"bytes" jsonschema:"Bytes of JSON the whole value takes."`
	Kept  int    `json:"kept" jsonschema:"Bytes of its text kept, before the marker."`
	Where string `json:"where" jsonschema:"Where the whole value is read."`
}

// fieldCutMarker ends a cut value.
const fieldCutMarker = "… [cut: %d bytes of JSON in all; see cut]"

// fitField is a free-form field of a run: its size, and how to set it to a
// cut text.
type fitField struct {
	name string
	size int
	text string // what is cut: the JSON of a raw field, else the string
	set  func(cut string)
}

// Fit returns r when its JSON takes at most room bytes, else a copy whose
// largest free-form fields are cut to their heads with a marker (a raw
// JSON field becomes a JSON string holding the head of its text) until it
// fits, each listed in Cut with where(field, bytes) saying where the whole
// value is read. A run that still does not fit (thousands of steps) is
// returned as small as it gets.
func (r *Run) Fit(room int, where func(field string, size int) string) *Run {
	return r.FitSized(room, page.Compact, where)
}

// FitSized is Fit with the run's size measured by size (the CLI prints it
// indented).
func (r *Run) FitSized(room int, size page.Sizer, where func(field string, size int) string) *Run {
	sz := func(v *Run) int {
		n, _ := size(v)
		return n
	}
	total := sz(r)
	if total <= room {
		return r
	}
	c := *r
	c.Steps = slices.Clone(r.Steps)
	if r.Question != nil {
		q := *r.Question
		c.Question = &q
	}
	fields := c.fields()
	slices.SortStableFunc(fields, func(a, b fitField) int { return b.size - a.size })
	for _, f := range fields {
		if total <= room {
			break
		}
		marker := fmt.Sprintf(fieldCutMarker, f.size)
		cut := FieldCut{Field: f.name, Bytes: f.size, Where: where(f.name, f.size)}
		overhead := page.JSONLen(cut) + len(marker) + 64
		keep := max(0, f.size-(total-room)-overhead)
		head := page.CutJSONString(f.text, keep)
		cut.Kept = len(head)
		f.set(head + marker)
		c.Cut = append(c.Cut, cut)
		total = sz(&c)
	}
	return &c
}

// fields are r's free-form fields that are not empty.
func (r *Run) fields() []fitField {
	var out []fitField
	raw := func(name string, v *json.RawMessage) {
		if len(*v) > 0 {
			out = append(out, fitField{name: name, size: len(*v), text: string(*v), set: func(s string) {
				b, _ := json.Marshal(s)
				*v = b
			}})
		}
	}
	str := func(name string, v *string) {
		if *v != "" {
			out = append(out, fitField{name: name, size: page.JSONLen(*v), text: *v, set: func(s string) { *v = s }})
		}
	}
	raw("input", &r.Input)
	raw("result", &r.Result)
	str("error", &r.Error)
	if r.Question != nil {
		str("question.text", &r.Question.Text)
	}
	for i := range r.Steps {
		str(fmt.Sprintf("steps[%d].error", i), &r.Steps[i].Error)
	}
	return out
}
