package ui

import (
	"os"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

// powerPanel shows GPU power against the trial timeline.
type powerPanel struct{ status string }

func (p *powerPanel) update(tea.KeyPressMsg) {}

func (p *powerPanel) title() string {
	return "GPU power · ░ warmup █ timed ╳ degraded │ trial"
}

func (p *powerPanel) view(data *runData, w, h int) string {
	return renderPower(p.status, data.spans, w, h)
}

// powerStatus says why the power panel has no watts to draw. GPU power
// sampling (NVML) is not part of this build yet, so the panel never
// pretends: it names the reason and draws the trial timeline it will
// plot watts against, warmup shaded and trial boundaries ticked.
func powerStatus() string {
	if _, err := os.Stat("/proc/driver/nvidia/gpus"); err != nil {
		return "no NVIDIA GPU found: no power data"
	}
	return "NVIDIA GPU found; this build does not sample its power yet"
}

// renderPower draws the status line and the trial timeline: ░ warmup,
// █ timed, ╳ a degraded trial, │ a boundary where trials are wide enough.
func renderPower(status string, spans []trialSpan, w, h int) string {
	lines := []string{styleWarn.Render(status)}
	if len(spans) > 0 {
		lines = append(lines, timeline(spans, w))
	}
	return strings.Join(lines, "\n")
}

func timeline(spans []trialSpan, w int) string {
	last := spans[len(spans)-1]
	total := last.start + last.length
	if total <= 0 {
		return ""
	}
	cells := make([]string, w)
	starts := make([]int, w)
	for i := range cells {
		cells[i] = " "
	}
	cellOf := func(d time.Duration) int { return min(w-1, int(int64(d)*int64(w)/int64(total))) }
	for _, s := range spans {
		from, to := cellOf(s.start), cellOf(s.start+s.length)
		glyph := "█"
		switch {
		case !s.ok:
			glyph = "╳"
		case s.warmup:
			glyph = "░"
		}
		for c := from; c <= to; c++ {
			cells[c] = glyph
		}
		starts[from]++
	}
	// A tick only where one trial starts in a cell and it spans several
	// cells; dense runs would otherwise be all ticks.
	var b strings.Builder
	for c, g := range cells {
		if starts[c] == 1 && c > 0 && c+1 < w && cells[c+1] == g && g != " " && (c == 0 || starts[c-1] == 0) {
			g = "│"
		}
		if g == "░" || g == "│" {
			b.WriteString(styleDim.Render(g))
		} else {
			b.WriteString(g)
		}
	}
	return b.String()
}
