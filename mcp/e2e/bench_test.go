package e2e

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkLaunchRunStdio measures the round trip of a launch_run call
// (wait_seconds 0) through the real binary over stdio: the client writes
// the request and the clock stops when the response line is read. It
// reports p50 and p99 of launch_run and, measured in the same run as a
// peer, of ping (the transport alone), with their ratio.
//
//	go test -run '^$' -bench LaunchRunStdio -benchtime 2000x ./mcp/e2e
func BenchmarkLaunchRunStdio(b *testing.B) {
	e := newEnv(b)
	s := e.serve("bench")
	ctx := context.Background()
	call := func(method string, params any) time.Duration {
		start := time.Now()
		m, err := s.client.Call(ctx, method, params)
		d := time.Since(start)
		if err != nil || m.Error != nil {
			b.Fatalf("%s: %v %s", method, err, m.Raw)
		}
		return d
	}
	launch := map[string]any{"name": "launch_run", "arguments": map[string]any{"target": "noop"}}
	for range 20 { // warm up: the store, the workflow cache, the page cache
		call("tools/call", launch)
		call("ping", nil)
	}
	lat := make([]time.Duration, 0, b.N)
	pings := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		lat = append(lat, call("tools/call", launch))
	}
	b.StopTimer()
	for range min(b.N, 2000) {
		pings = append(pings, call("ping", nil))
	}
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	pp50, pp99 := percentile(pings, 50), percentile(pings, 99)
	b.ReportMetric(float64(pp50.Microseconds()), "ping-p50-µs")
	b.ReportMetric(float64(pp99.Microseconds()), "ping-p99-µs")
	if pp50 > 0 {
		b.ReportMetric(float64(p50)/float64(pp50), "p50/ping")
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}
