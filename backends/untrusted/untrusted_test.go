package untrusted

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestLineRemovesEscapesAndControls(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"\x1b]0;pwned\x07title", "title"},                   // OSC set-title, BEL-terminated
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"}, // OSC 8 hyperlink, ST-terminated
		{"a\x1b[2Jb", "ab"},                                  // clear screen
		{"a\x1b[38;2;255;0;0mred\x1b[0m", "ared"},
		{"a\x1bPq#0;2;0;0;0\x1b\\b", "ab"}, // DCS (sixel)
		{"a\x1bcb", "ab"},                  // reset
		{"a\x1b(Bb", "ab"},                 // charset, with an intermediate
		{"cut \x1b[31", "cut "},            // cut off at the end
		{"cut \x1b]0;title", "cut "},
		{"bell\x07 and \x00nul\x7f", "bell and nul"},
		{"two\nlines\r\nand\ttab", "two lines  and tab"},
		{"c1 \u009b31m", "c1 31m"},
		{"bidi \u202eevil\u202c", "bidi evil"},
		{"bad \xff\xfe utf8", "bad \ufffd\ufffd utf8"},
		{"héllo 世界 ✓", "héllo 世界 ✓"},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestTextKeepsLineBreaks(t *testing.T) {
	if got := Text("a\r\nb\rc\n\td\x1b[1m\u2028e"); got != "a\nb\nc\n\td\ne" {
		t.Errorf("Text = %q", got)
	}
}

func TestSecretsAreRedactedBeforeTheCut(t *testing.T) {
	key := "sk-proj-0123456789abcdef"
	got := Line("Incorrect API key provided: Bearer "+key+". Rotate "+key, key)
	if strings.Contains(got, "0123") || got != "Incorrect API key provided: Bearer [redacted]. Rotate [redacted]" {
		t.Errorf("got %q", got)
	}
	// A key split by an escape sequence is whole once the sequence is gone.
	if got := Line("key sk-proj-0123\x1b[0m456789abcdef", key); strings.Contains(got, "456789") {
		t.Errorf("a split key survived: %q", got)
	}
	// A cut that would fall inside the key falls after its redaction.
	long := strings.Repeat("x", MaxLine-10) + key
	if got := Line(long, key); strings.Contains(got, "sk-") {
		t.Errorf("a prefix of the key survived the cut: %q", got[len(got)-30:])
	}
	// Keys too short to be secrets blank nothing.
	if got := Line("abc abc", "abc"); got != "abc abc" {
		t.Errorf("a 3-byte key was redacted: %q", got)
	}
}

func TestLineIsBounded(t *testing.T) {
	got := Line(strings.Repeat("é", MaxLine))
	if len(got) > MaxLine || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("%d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-4:])
	}
}

func TestCleanAllReachesEveryString(t *testing.T) {
	type inner struct {
		Name  string
		Notes string `untrusted:"text"`
	}
	type doc struct {
		Title   string
		Ptr     *inner
		List    []inner
		Map     map[string]string
		Any     map[string]any
		Numbers []int
		private string
	}
	d := doc{Title: "t\x1b[2J", Ptr: &inner{Name: "n\x07", Notes: "a\nb\x1b]0;x\x07"}, List: []inner{{Name: "l\x1bc"}},
		Map: map[string]string{"k\x1b[1m": "v\x00"}, Any: map[string]any{"s": "x\x1b[0m", "n": 3}, private: "p\x1b"}
	CleanAll(&d)
	if d.Title != "t" || d.Ptr.Name != "n" || d.Ptr.Notes != "a\nb" || d.List[0].Name != "l" || d.Map["k"] != "v" ||
		d.Any["s"] != "x" || d.Any["n"] != 3 || d.private != "p\x1b" {
		t.Errorf("%+v %+v %+v", d, *d.Ptr, d.List)
	}
}

// FuzzLine: whatever a server sends, what comes out holds no control
// character, no ESC, valid UTF-8, within the bound, and never the secret.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "\x1b]0;pwned\x07", "\x1b[2J", "Bearer sk-0123456789", "\xff\u202e", "a\r\nb\tc", "\x1bP\x1b\\"} {
		f.Add(s, "sk-0123456789")
	}
	f.Fuzz(func(t *testing.T, s, secret string) {
		for _, out := range []string{Line(s, secret), Text(s, secret)} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 from %q: %q", s, out)
			}
			for _, r := range out {
				if r != '\n' && r != '\t' && unicode.IsControl(r) || bidiControl(r) {
					t.Fatalf("control %U left in %q (from %q)", r, out, s)
				}
			}
			if shown := clean(secret, false); len(shown) >= MinSecret && !strings.Contains(Redacted, shown) && strings.Contains(out, shown) {
				t.Fatalf("the secret %q is in %q", secret, out)
			}
		}
		line := Line(s, secret)
		if len(line) > MaxLine || strings.ContainsAny(line, "\n\t") {
			t.Fatalf("Line(%q) = %q", s, line)
		}
	})
}

// A password and every credential-named query value are gone from a URL
// shown or stored; the rest stays readable.
func TestURLHidesPasswordsAndKeys(t *testing.T) {
	for raw, want := range map[string]string{
		"http://bob:PW-123@host:8000/v1":                 "http://bob:xxxxx@host:8000/v1",
		"http://host/v1?api_key=K-999&model=m":           "http://host/v1?api_key=xxxxx&model=m",
		"https://h/metrics?token=T-1&X-Amz-Signature=S2": "https://h/metrics?X-Amz-Signature=xxxxx&token=xxxxx",
		"http://bob@host/v1":                             "http://bob@host/v1",
		"http://host:8000/v1":                            "http://host:8000/v1",
		"http://[::1":                                    "(an address that does not parse)",
		"http://h/v1?%zz=K-999":                          "http://h/v1?xxxxx",
	} {
		got := URL(raw)
		if got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
		for _, secret := range []string{"PW-123", "K-999", "T-1", "S2"} {
			if strings.Contains(got, secret) {
				t.Errorf("%s: %q shows %s", raw, got, secret)
			}
		}
	}
}

func FuzzURL(f *testing.F) {
	f.Add("http://bob:PW@host/v1?api_key=K")
	f.Fuzz(func(t *testing.T, raw string) {
		got := URL(raw)
		if len(got) > MaxLine || strings.ContainsAny(got, "\x1b\n") {
			t.Fatalf("%q", got)
		}
	})
}
