package ui

import (
	"fmt"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// BenchmarkDashboardFrame is the cost of one redraw at 80x24 and 200x60
// after 10 and 10,000 trials per arm: the accumulators are incremental,
// so the two should cost about the same.
func BenchmarkDashboardFrame(b *testing.B) {
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		for _, trials := range []int{10, 10000} {
			b.Run(fmt.Sprintf("%dx%d/trials=%d", size[0], size[1], trials), func(b *testing.B) {
				tr := newTestRun(b, "greedy-vs-sampling")
				tr.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
				tr.send(eventsMsg(syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, trials)))
				for b.Loop() {
					tr.app.stale = true
					tr.app.Update(tickMsg{})
				}
			})
		}
	}
}

// BenchmarkFoldTrial is the UI's cost per finished trial (three arms,
// 1,000 trials each, folded one message per trial).
func BenchmarkFoldTrial(b *testing.B) {
	events := syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 1000)
	for b.Loop() {
		tr := newTestRun(b, "greedy-vs-sampling")
		for _, ev := range events {
			tr.app.Update(eventsMsg{ev})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/trial")
}
