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
			w.Close()
			if _, err := WriteBeside(w.ManifestPath(), "/../../x.txt", []byte("x")); err == nil {
				t.Errorf("%q: a file was written out of the folder", id)
			}
			if path, err := WriteBeside(w.ManifestPath(), ".crash.txt", []byte("x")); err != nil || filepath.Dir(path) != dir {
				t.Errorf("%q: crash file %s: %v", id, path, err)
			}
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

// TestReadersRejectImpossibleTimes: a negative e2e moved an arm's mean by
// −35% without a word, and one of 1e160 made the report hang. Each is a
// bad line, named, and left out; the rest of the file reads.
func TestReadersRejectImpossibleTimes(t *testing.T) {
	row := func(trial int, e2e string) string {
		r := record("greedy", trial, PhaseTimed, StatusOK, 100)
		return strings.Replace(strings.Join(r.Fields(), ","), ",100.000,", ","+e2e+",", 1) + "\n"
	}
	data := strings.Join(Header, ",") + "\n" + row(1, "100.000") + row(2, "-35.000") + row(3, "1e160") + row(4, "100.000")
	recs, warnings, err := ParseTrials("x.csv", []byte(data))
	if err != nil || len(recs) != 2 || len(warnings) != 2 ||
		!strings.Contains(warnings[0], `x.csv:3: column e2e_ms: "-35.000": not a time in ms, 0 to 1e9 (11 days)`) ||
		!strings.Contains(warnings[1], `x.csv:4: column e2e_ms: "1e160": not a time in ms`) {
		t.Errorf("%d records, warnings %q, %v", len(recs), warnings, err)
	}
	// Energy above the idle baseline may be negative; a power may not.
	neg := strings.Replace(row(5, "100.000"), ",unavailable,", ",unavailable,-3,", 1)
	neg = strings.Replace(neg, ",unavailable,-3,,", ",unavailable,-3,", 1)
	if _, _, err := ParseTrials("x.csv", []byte(strings.Join(Header, ",")+"\n"+neg)); err == nil || !strings.Contains(err.Error(), `column avg_power_w: "-3": not a number from 0 to 1e12`) {
		t.Errorf("a negative power: %v", err)
	}
}

// TestReadersTakeAByteOrderMark: a CSV saved by a spreadsheet starts with
// a UTF-8 BOM; it is read as the file it is.
func TestReadersTakeAByteOrderMark(t *testing.T) {
	data := "\ufeff" + strings.Join(Header, ",") + "\n" + strings.Join(record("greedy", 1, PhaseTimed, StatusOK, 100).Fields(), ",") + "\n"
	if recs, warnings, err := ParseTrials("x.csv", []byte(data)); err != nil || len(recs) != 1 || len(warnings) != 0 {
		t.Errorf("%d records, %q, %v", len(recs), warnings, err)
	}
	if tokens, _, err := ParseTokens("t.csv", []byte("\ufeffarm,trial,index,t_ms\ngreedy,1,1,2.5\n")); err != nil || len(tokens) != 1 {
		t.Errorf("tokens: %v %v", tokens, err)
	}
}

// TestAnUnclosedQuoteCostsOneLine: a quote opened in tokens.csv and never
// closed took every line after it into one field, and they were lost.
// The warning names the line it opens on, and the lines after it read.
func TestAnUnclosedQuoteCostsOneLine(t *testing.T) {
	data := "arm,trial,index,t_ms\ngreedy,1,1,2.5\ngreedy,1,\"2,3.0\ngreedy,1,3,4.0\ngreedy,2,1,2.0\n"
	tokens, warnings, err := ParseTokens("t.csv", []byte(data))
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "t.csv:3: a quoted field opens on this line and is never closed") {
		t.Fatalf("warnings %q, %v", warnings, err)
	}
	if a := tokens[TrialKey{Arm: "greedy", Trial: 1}]; len(a.AtMs) != 2 || a.AtMs[1] != 4.0 || len(tokens[TrialKey{Arm: "greedy", Trial: 2}].AtMs) != 1 {
		t.Errorf("arrivals %+v", tokens)
	}
}
