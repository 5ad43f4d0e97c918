package runs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/workflows"
)

// httpStep sends an http call's request.
func (x *execution) httpStep(st *workflows.Step, pos int) flow {
	req, err := x.httpRequest(st)
	if err != nil {
		return x.failStep(st, pos, err.Error())
	}
	if _, err := x.start(st, pos, nil); err != nil {
		return x.storeFailed("record step start", err)
	}
	x.j.write(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "started", Text: req.method + " " + req.redacted})
	rec, errText := x.doHTTP(st, req)
	if x.ctx.Err() != nil {
		return x.cutShort(st, pos, rec)
	}
	status := StepSucceeded
	if errText != "" {
		status = StepFailed
	}
	x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: status, Error: errText})
	return x.finish(st, pos, status, rec, errText)
}

// httpCall is a rendered http step.
type httpCall struct {
	method   string
	url      string
	redacted string // the URL without its query, for the journal
	headers  map[string]string
	body     *string
	expect   []int
}

func (x *execution) httpRequest(st *workflows.Step) (*httpCall, error) {
	env := x.env()
	h := st.HTTP
	u, err := h.URL.Render(env)
	if err != nil {
		return nil, fmt.Errorf("http url: %w", err)
	}
	if err := workflows.CheckURL(u); err != nil {
		return nil, fmt.Errorf("http url: %w", err)
	}
	c := &httpCall{method: h.Method, url: u, redacted: u, headers: map[string]string{}, expect: h.ExpectStatus}
	if c.method == "" {
		c.method = http.MethodGet
	}
	if pu, err := url.Parse(u); err == nil {
		pu.RawQuery, pu.Fragment = "", ""
		c.redacted = pu.String()
	}
	for k, t := range h.Headers {
		v, err := t.Render(env)
		if err != nil {
			return nil, fmt.Errorf("http header %s: %w", k, err)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("http header %s: contains a line break or NUL byte", k)
		}
		c.headers[k] = v
	}
	if h.Body != nil {
		b, err := h.Body.Render(env)
		if err != nil {
			return nil, fmt.Errorf("http body: %w", err)
		}
		c.body = &b
	}
	return c, nil
}

// doHTTP performs the request; errText is empty when the status is
// accepted.
func (x *execution) doHTTP(st *workflows.Step, c *httpCall) (stepRecord, string) {
	var rec stepRecord
	timeout := st.Timeout
	if timeout <= 0 {
		timeout = x.e.opts.HTTPTimeout
	}
	ctx, cancel := context.WithTimeout(x.ctx, timeout)
	defer cancel()
	var body io.Reader
	if c.body != nil {
		body = strings.NewReader(*c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, body)
	if err != nil {
		return rec, err.Error()
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	client := x.e.opts.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil && x.ctx.Err() == nil {
			return rec, fmt.Sprintf("timed out after %s", timeout)
		}
		return rec, strings.ReplaceAll(err.Error(), c.url, c.redacted)
	}
	defer resp.Body.Close()
	limit := int64(x.e.opts.OutputCap)
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if int64(len(b)) > limit {
		b, rec.BodyTruncated = b[:limit], true
	}
	rec.StatusCode = resp.StatusCode
	rec.Body = strings.ToValidUTF8(string(b), "\uFFFD")
	x.j.add(Record{Type: RecordText, Step: st.ID, Stream: "http", Text: fmt.Sprintf("%s %s → %s", c.method, c.redacted, resp.Status)})
	if err != nil {
		return rec, fmt.Sprintf("read response body: %v", err)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if len(c.expect) > 0 {
		ok = slices.Contains(c.expect, resp.StatusCode)
	}
	if !ok {
		return rec, fmt.Sprintf("unexpected status %s", resp.Status)
	}
	return rec, ""
}
