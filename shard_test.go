package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/session"
)

// Three shards of one open loop (--rate 30 --trials 300), three
// processes on loopback told one --start-at, merged by 'tokentop merge',
// are the run one process makes: the same requests, each due at the
// same time from its block's start, and a rate table that offers 30
// req/s, computed from the merged rows.
func TestThreeShardsMergeIntoTheRunOfOne(t *testing.T) {
	bin := buildBinary(t)
	url := ollamaServer(t, time.Millisecond)
	args := []string{"run", "--backend", "ollama", "--url", url, "--model", "tiny15m", "--profile", "quick",
		"--rate", "30", "--trials", "300", "--warmup", "3", "--headless", "--power", "off"}
	dir := t.TempDir()
	shards, outs := startShards(t, bin, args, 3, dir)
	one := filepath.Join(dir, "one")
	if code, stdout, stderr := runBinary(t, append(args, "--out", one)...); code != exitOK {
		t.Fatalf("one process: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for i, cmd := range shards {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	merged := filepath.Join(dir, "merged")
	code, stdout, stderr := runCLI(append(append([]string{"merge"}, outs...), "--out", merged)...)
	if code != exitOK || !strings.Contains(stdout, "merged complete") {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
	}

	load := func(dir string) *session.Session {
		paths := manifests(t, dir)
		if len(paths) != 1 {
			t.Fatalf("%s: manifests %v", dir, paths)
		}
		s, err := session.Load(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	single, joined := load(one), load(merged)
	type request struct {
		phase, shard string
		due          float64
	}
	requests := func(s *session.Session) map[session.TrialKey]request {
		out := map[session.TrialKey]request{}
		for _, r := range s.Records {
			out[session.TrialKey{Arm: r.Arm, Trial: r.Trial}] = request{r.Phase, r.Shard, r.ScheduledMs}
		}
		return out
	}
	want, got := requests(single), requests(joined)
	if len(want) != 303 || len(got) != len(want) {
		t.Fatalf("%d requests merged, %d from one process", len(got), len(want))
	}
	perShard := map[string]int{}
	for key, w := range want {
		g, ok := got[key]
		if !ok || g.phase != w.phase || math.Abs(g.due-w.due) > 1e-9 {
			t.Errorf("%s trial %d: merged %+v, one process %+v", key.Arm, key.Trial, g, w)
		}
		perShard[g.shard]++
	}
	if perShard["0"] != 101 || perShard["1"] != 101 || perShard["2"] != 101 {
		t.Errorf("requests per shard %v", perShard)
	}
	m := joined.Manifest
	if m.Status != session.StatusComplete || len(m.Shards) != 3 || m.Shards[2].Index != 2 || m.Shards[0].StartAt == nil {
		t.Errorf("merged manifest: status %s, shards %+v", m.Status, m.Shards)
	}
	rates := session.RateSweeps(m, joined.Records)
	if len(rates) != 1 || len(rates[0].Levels) != 1 || rates[0].Levels[0].Offered != 30 || rates[0].Levels[0].N != 300 {
		t.Fatalf("rate table %+v", rates)
	}
	if code, stdout, _ := runCLI("report", load(merged).Path); code != exitOK || !strings.Contains(stdout, "reached the trial cap of 300, counted over the 3 shards together") {
		t.Errorf("report: exit %d\n%s", code, stdout)
	}
}

// startShards starts n processes of bin, shards of the run args make,
// each writing under dir, all told to start their timed blocks 3 s from
// now; it returns them and their folders.
func startShards(tb testing.TB, bin string, args []string, n int, dir string) ([]*exec.Cmd, []string) {
	tb.Helper()
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	var shards []*exec.Cmd
	var outs []string
	for i := range n {
		out := filepath.Join(dir, "shard"+strconv.Itoa(i))
		cmd := exec.Command(bin, append(args, "--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", at, "--out", out)...)
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		shards, outs = append(shards, cmd), append(outs, out)
	}
	return shards, outs
}

// BenchmarkShards drives an open loop at a rate this machine's one
// process sends late, then as four shards of it: the dispatch lag (a
// request's send minus its due time, queue_ms, with no cap in flight) of
// one process against the merged shards', p50 and p99.
func BenchmarkShards(b *testing.B) {
	rate := 2000
	if v, err := strconv.Atoi(os.Getenv("TOKENTOP_BENCH_RATE")); err == nil {
		rate = v
	}
	for range b.N {
		url := ollamaServer(b, 0)
		dir := b.TempDir()
		args := []string{"run", "--backend", "ollama", "--url", url, "--model", "tiny15m", "--profile", "quick",
			"--rate", strconv.Itoa(rate), "--trials", strconv.Itoa(4 * rate), "--warmup", "0", "--headless", "--power", "off", "--server-metrics", "off"}
		bin := buildBinary(b)
		lag := func(s *session.Session) (p50, p99 float64) {
			var q []float64
			for _, r := range s.Records {
				if r.Phase == session.PhaseTimed {
					q = append(q, r.QueueMs)
				}
			}
			d := metrics.Describe(q)
			return d.Median, d.P99
		}
		one := filepath.Join(dir, "one")
		if out, err := exec.Command(bin, append(args, "--out", one)...).CombinedOutput(); err != nil {
			b.Fatalf("one process: %v\n%s", err, out)
		}
		shards, outs := startShards(b, bin, args, 4, dir)
		for _, cmd := range shards {
			cmd.Wait()
		}
		merged := filepath.Join(dir, "merged")
		if code, stdout, stderr := runCLI(append(append([]string{"merge"}, outs...), "--out", merged)...); code != exitOK {
			b.Fatalf("merge: %s %s", stdout, stderr)
		}
		for name, d := range map[string]string{"one": one, "shards": merged} {
			paths, _ := filepath.Glob(filepath.Join(d, "*.toml"))
			s, err := session.Load(paths[0])
			if err != nil {
				b.Fatal(err)
			}
			p50, p99 := lag(s)
			b.ReportMetric(p50, name+"-lag-p50-ms")
			b.ReportMetric(p99, name+"-lag-p99-ms")
		}
	}
}
