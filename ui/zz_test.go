package ui

import (
	"os"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

func TestZZShow(t *testing.T) {
	var b strings.Builder
	for _, st := range screenStates(t) {
		if !strings.Contains(st.name, "energy") {
			continue
		}
		for _, size := range [][2]int{{80, 24}, {200, 60}} {
			st.model.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			b.WriteString("=== " + st.name + "\n" + ansi.Strip(st.model.View().Content) + "\n")
		}
	}
	os.WriteFile("/tmp/zz.txt", []byte(b.String()), 0o644)
}
