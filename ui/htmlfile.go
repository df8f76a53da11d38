package ui

import (
	"path/filepath"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui/htmlreport"
)

// htmlWrittenMsg says where the HTML report went, or why it did not.
type htmlWrittenMsg struct {
	path string
	err  error
}

// writeHTML builds the HTML report of refs and writes it to path, off the
// UI's path: the verdicts' bootstrap and the charts take seconds.
func writeHTML(refs []session.Ref, sessions []*session.Session, path string) tea.Cmd {
	return func() tea.Msg {
		r, err := htmlreport.Build(refs, sessions, nil, session.DefaultTestOptions)
		if err != nil {
			return htmlWrittenMsg{path, err}
		}
		return htmlWrittenMsg{path, r.Save(path)}
	}
}

// writeRunHTML reports a saved run's arms against each other, beside its
// manifest: S.toml gets S.html.
func writeRunHTML(manifest string) tea.Cmd {
	path := strings.TrimSuffix(manifest, ".toml") + ".html"
	return func() tea.Msg {
		s, err := session.Load(manifest)
		if err != nil {
			return htmlWrittenMsg{path, err}
		}
		refs, sessions := session.ArmComparison(s)
		return writeHTML(refs, sessions, path)()
	}
}

// comparisonHTMLPath names a comparison's report after its sessions, in
// the first one's folder.
func comparisonHTMLPath(refs []session.Ref) string {
	var stems []string
	for _, r := range refs {
		stem := session.FileStem(r.Path)
		if r.Arm != "" {
			stem += "-" + r.Arm
		}
		stems = append(stems, stem)
	}
	return filepath.Join(filepath.Dir(refs[0].Path), "compare-"+strings.Join(stems, "-vs-")+".html")
}

// htmlNotice puts a written report into words for the line above the keys.
func htmlNotice(msg htmlWrittenMsg) string {
	if msg.err != nil {
		return styleBad.Render("✗ HTML report not written: " + msg.err.Error())
	}
	return styleGood.Render("✓ HTML report: ") + msg.path
}
