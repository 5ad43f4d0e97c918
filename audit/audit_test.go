package audit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

func TestDigestIsCanonicalAndHidesTheArguments(t *testing.T) {
	t.Parallel()
	a := Digest(json.RawMessage(`{"target":"deploy","input":{"token":"s3cret","n":1.50}}`))
	b := Digest(json.RawMessage(` { "input" : { "n":1.50, "token":"s3cret" }, "target":"deploy" }`))
	if a != b {
		t.Fatalf("digests differ for the same arguments: %s, %s", a, b)
	}
	if c := Digest(json.RawMessage(`{"target":"deploy","input":{"token":"other","n":1.50}}`)); c == a {
		t.Fatal("different arguments have the same digest")
	}
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 {
		t.Fatalf("digest %q", a)
	}
	if Digest(nil) != Digest(json.RawMessage(`{}`)) {
		t.Fatal("no arguments digest unlike {}")
	}
}

func TestRecordKeepsTheDigestOnly(t *testing.T) {
	t.Parallel()
	st := memory.New()
	l := &Log{Store: st}
	l.Record(context.Background(), Entry{Principal: "agent:a", Connection: "conn_1", Tool: "launch_run", Args: json.RawMessage(`{"input":{"token":"s3cret"}}`), Outcome: store.AuditOK, Subject: "run_1"})
	got, err := st.ListAudit(context.Background(), store.AuditFilter{})
	if err != nil || len(got) != 1 {
		t.Fatalf("entries %v, %v", got, err)
	}
	b, _ := json.Marshal(got[0])
	if strings.Contains(string(b), "s3cret") || got[0].ArgsDigest != Digest(json.RawMessage(`{"input":{"token":"s3cret"}}`)) || got[0].Principal != "agent:a" {
		t.Fatalf("entry %s", b)
	}
	var nilLog *Log
	nilLog.Record(context.Background(), Entry{}) // records nothing, does not panic
}
