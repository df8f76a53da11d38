package session

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHostileNamesStayInTheSessionsFolder: a profile or backend name that
// is a path, an escape or markup makes a plain file name, and every file
// of the session is made inside the sessions folder, nowhere above it.
func TestHostileNamesStayInTheSessionsFolder(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "a", "sessions")
	created := time.Date(2026, 11, 25, 1, 2, 3, 0, time.UTC)
	safe := regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
	for _, name := range []string{"x/../../../ESCAPED", "..", "../..", `a\..\..\b`, "\x1b]0;pwned\x07", "bell\x07", `"quoted"`, "<script>", "", strings.Repeat("long", 100), "C:\\x", "/abs"} {
		stem := Stem(created, name, "ollama+llamacpp")
		if !safe.MatchString(stem) || len(stem) > 200 {
			t.Errorf("Stem(%q) = %q", name, stem)
		}
		// Create takes an ID from elsewhere too: it makes it safe again.
		for _, id := range []string{stem, name} {
			w, err := Create(dir, newManifest(id))
			if err != nil {
				t.Fatalf("%q: %v", id, err)
			}
			if f, err := w.CreateFile(".crash/../../x.txt"); err != nil {
				t.Errorf("%q: crash file: %v", id, err)
			} else {
				f.Close()
			}
			w.Close()
			if filepath.Dir(w.ManifestPath()) != dir || !safe.MatchString(filepath.Base(w.ManifestPath())) {
				t.Errorf("%q: manifest at %s", id, w.ManifestPath())
			}
		}
	}
	// Nothing anywhere but in dir.
	filepath.WalkDir(parent, func(path string, d os.DirEntry, err error) error {
		if !d.IsDir() && filepath.Dir(path) != dir {
			t.Errorf("a file outside the sessions folder: %s", path)
		}
		if !d.IsDir() && !safe.MatchString(d.Name()) {
			t.Errorf("an unsafe file name: %q", d.Name())
		}
		return nil
	})
}

// TestReadFilesCleanOutsideText: a session written by hand or by another
// program with escapes in its fields reads back with none, in the
// manifest and the CSV alike.
func TestReadFilesCleanOutsideText(t *testing.T) {
	dir := t.TempDir()
	m := newManifest("esc")
	m.Targets = []TargetInfo{{Name: "t", Kind: "openai", ServerVersion: "v1\x1b]0;pwned\x07", ModelActual: "m\x1b[2J",
		Details: map[string]string{"k\x1b[1m": "v\x07"}}}
	m.Profile.Prompts = []string{"line one\nline two\x1b[31m"}
	m.StopNote = "stopped \x1b[2Jhere"
	w, err := Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	r := record("greedy", 1, PhaseTimed, StatusError, 5)
	r.Error = "HTTP 401: Incorrect key \x1b]0;pwned\x07 \x1b[2J"
	if err := w.Append(r, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s, err := Load(w.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	tg := s.Manifest.Targets[0]
	if tg.ServerVersion != "v1" || tg.ModelActual != "m" || tg.Details["k"] != "v" || s.Manifest.StopNote != "stopped here" ||
		s.Manifest.Profile.Prompts[0] != "line one\nline two" {
		t.Errorf("manifest: %+v %q %q", tg, s.Manifest.StopNote, s.Manifest.Profile.Prompts)
	}
	if got := s.Records[0].Error; got != "HTTP 401: Incorrect key  " {
		t.Errorf("error column read as %q", got)
	}
}
