package runner

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/llamacpp"
	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/metrics"
)

// BenchmarkClientITL checks that the client is not what a load
// run measures: N streams at once (64 is the load) against a local server that sends
// llama-server's recorded stream one event every 4 ms and notes when it
// flushed each token. The ITL error is, per token, the client's measured
// gap minus the server's actual one (so the server's own timer jitter is
// not blamed on the client). It also counts the connections opened after
// the first round: with enough idle connections kept per host, none.
//
// The 1- and 8-stream runs show how much of the error is two cores
// shared by 64 server handlers and 64 client readers.
func BenchmarkClientITL(b *testing.B) {
	for _, streams := range []int{1, 8, 64} {
		b.Run("streams="+strconv.Itoa(streams), func(b *testing.B) { benchClientITL(b, streams) })
	}
}

func benchClientITL(b *testing.B, streams int) {
	const gap = 4 * time.Millisecond
	events := strings.SplitAfter(string(replay.Load(b, "llamacpp/completion_t0_stream").Body), "\n\n")
	var mu sync.Mutex
	sent := map[string][]time.Time{} // per prompt: when each token's event was flushed
	var conns atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		flusher := w.(http.Flusher)
		var times []time.Time
		start := time.Now()
		for k, ev := range events {
			time.Sleep(time.Until(start.Add(time.Duration(k+1) * gap)))
			w.Write([]byte(ev))
			flusher.Flush()
			if strings.Contains(ev, `"stop":false`) {
				times = append(times, time.Now())
			}
		}
		mu.Lock()
		sent[req.Prompt] = times
		mu.Unlock()
	}), ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	backend, err := llamacpp.Kind.New(backends.Config{URL: "http://" + ln.Addr().String()})
	if err != nil {
		b.Fatal(err)
	}
	clocks := newClocks(streams, 64)
	var errs []float64
	round, opened := 0, int32(0)
	for b.Loop() {
		round++
		before := conns.Load()
		arrivals := make([][]metrics.Arrival, streams)
		starts := make([]time.Time, streams)
		var wg sync.WaitGroup
		for s := range streams {
			wg.Go(func() {
				prompt := "stream " + strconv.Itoa(s) + " round " + strconv.Itoa(round)
				starts[s] = time.Now()
				clocks[s].reset(starts[s])
				if _, err := backend.Generate(context.Background(), backends.Request{Prompt: prompt, MaxTokens: 64}, clocks[s].onChunk); err != nil {
					b.Error(err)
				}
				arrivals[s] = slices.Clone(clocks[s].arrivals)
			})
		}
		wg.Wait()
		if round > 1 {
			opened += conns.Load() - before
		}
		for s := range streams {
			server := sent["stream "+strconv.Itoa(s)+" round "+strconv.Itoa(round)]
			got := arrivals[s]
			if len(got) != len(server) {
				b.Fatalf("stream %d: %d chunks measured, %d sent", s, len(got), len(server))
			}
			for k := 1; k < len(got); k++ {
				clientGap := got[k].At - got[k-1].At
				serverGap := server[k].Sub(server[k-1])
				errs = append(errs, float64((clientGap-serverGap).Abs())/float64(time.Millisecond))
			}
		}
	}
	slices.Sort(errs)
	b.ReportMetric(metrics.Mean(errs), "itl-err-mean-ms")
	b.ReportMetric(metrics.PercentileSorted(errs, 0.99), "itl-err-p99-ms")
	b.ReportMetric(errs[len(errs)-1], "itl-err-max-ms")
	if round > 1 {
		b.ReportMetric(float64(opened)/float64(round-1), "new-conns/round")
	}
}
