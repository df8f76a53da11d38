package htmlreport

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser finds a headless Chromium, or skips the test where none is
// installed (CI installs one and sets TOKENTOP_REQUIRE_CHROMIUM).
func browser(t *testing.T) string {
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TOKENTOP_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no headless Chromium; .ci/run installs chromium-headless-shell")
	}
	t.Skip("no headless Chromium here; .ci/run installs one, so CI runs this test")
	return ""
}

// rendering is what the browser did with a page: its picture, the
// console messages it logged, and every request the page made.
type rendering struct {
	img      image.Image
	console  []string
	requests []string
}

// browserChatter is what Chromium asks for on its own at start, whatever
// the page: a clock check, updates, accounts. Any other request came from
// the page.
var browserChatter = regexp.MustCompile(`^(https?://)?(clients\d*\.google\.com|update\.googleapis\.com|accounts\.google\.com)(:443)?(/|$)`)

// render loads file in a real browser whose every request goes to a
// recording proxy that answers none, so the page gets no network and each
// fetch it tries is seen.
func render(t *testing.T, chromium, file string, width, height int) rendering {
	t.Helper()
	var mu sync.Mutex
	var out rendering
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Host // CONNECT names the host
		if r.Method != http.MethodConnect {
			target = r.URL.String()
		}
		if !browserChatter.MatchString(target) {
			mu.Lock()
			out.requests = append(out.requests, r.Method+" "+target)
			mu.Unlock()
		}
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer proxy.Close()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
		"--proxy-server="+proxy.URL, "--proxy-bypass-list=<-loopback>",
		"--enable-logging=stderr", "--v=0", "--user-data-dir="+filepath.Join(dir, "profile"),
		fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+shot, "file://"+file)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", chromium, err, log.String())
	}
	// The report has no script, so any console message is trouble.
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			out.console = append(out.console, line)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, log.String())
	}
	defer f.Close()
	if out.img, err = png.Decode(f); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return out
}

// The checks below can fail: a page that fetches and logs is caught.
func TestTheBrowserCheckSeesFetchesAndConsoleMessages(t *testing.T) {
	chromium := browser(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	page := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(page, []byte(`<html><body><img src="http://example.invalid/x.png"><link rel="stylesheet" href="https://fonts.googleapis.com/css">`+
		`<script>console.error("boom")</script></body></html>`), 0o644)
	r := render(t, chromium, page, 400, 300)
	if len(r.console) == 0 || !strings.Contains(strings.Join(r.console, "\n"), "boom") {
		t.Errorf("console.error went unseen: %q", r.console)
	}
	fetched := strings.Join(r.requests, "\n")
	for _, want := range []string{"example.invalid", "fonts.googleapis.com"} {
		if !strings.Contains(fetched, want) {
			t.Errorf("the fetch of %s went unseen: %q", want, r.requests)
		}
	}
}

// share is the fraction of the rectangle's pixels that pass.
func share(img image.Image, r image.Rectangle, pass func(r, g, b uint32) bool) float64 {
	r = r.Intersect(img.Bounds())
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if cr, cg, cb, _ := img.At(x, y).RGBA(); pass(cr, cg, cb) {
				n++
			}
		}
	}
	return float64(n) / float64(max(1, r.Dx()*r.Dy()))
}

// inked: not near white.
func inked(r, g, b uint32) bool { return r < 0xe000 || g < 0xe000 || b < 0xe000 }

// coloured: the arms' curves and marks, not the grey grid, axes and
// labels every chart has even when it draws no data.
func coloured(r, g, b uint32) bool { return max(r, g, b)-min(r, g, b) > 0x3000 }

func TestTheReportRendersInARealBrowser(t *testing.T) {
	chromium := browser(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	r := buildRun(t, syntheticSession(t, 60, 1, 1.3, 1.1))
	dir := t.TempDir()
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.html")
	if err := os.WriteFile(report, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A laptop and a phone: the page renders, fills the window, fetches
	// nothing and logs nothing.
	for _, size := range [][2]int{{1280, 2000}, {390, 2000}} {
		r := render(t, chromium, report, size[0], size[1])
		if b := r.img.Bounds(); b.Dx() != size[0] || b.Dy() != size[1] {
			t.Errorf("a %dx%d window gave a %v screenshot", size[0], size[1], b)
		}
		if share := share(r.img, r.img.Bounds(), inked); share < 0.02 {
			t.Errorf("at %d wide the page is blank (%.3f inked)", size[0], share)
		}
		if len(r.console) > 0 || len(r.requests) > 0 {
			t.Errorf("at %d wide the page logged %q and fetched %q", size[0], r.console, r.requests)
		}
	}
	// Every chart, each in a box of its own on one sheet: each box must
	// hold the arms' coloured curves, not just a grid on white.
	const boxW, boxH = 800, 450
	var sheet strings.Builder
	sheet.WriteString(`<!DOCTYPE html><html><body style="margin:0;background:#fff">`)
	for i, c := range r.Charts {
		svg, err := svgOf(c.plot)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sheet, `<div style="position:absolute;left:0;top:%dpx;width:%dpx;height:%dpx">%s</div>`,
			i*boxH, boxW, boxH, strings.Replace(svg, "<svg", `<svg style="width:100%;height:100%"`, 1))
	}
	sheet.WriteString(`</body></html>`)
	charts := filepath.Join(dir, "charts.html")
	if err := os.WriteFile(charts, []byte(sheet.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sheetShot := render(t, chromium, charts, boxW, boxH*len(r.Charts))
	img := sheetShot.img
	for i, c := range r.Charts {
		// The plot area, inside the axes: curves and bars, not labels.
		box := image.Rect(boxW/8, i*boxH+boxH/8, boxW*7/8, (i+1)*boxH-boxH/5)
		if share := share(img, box, coloured); share < 0.002 {
			t.Errorf("the %s chart drew no data in its plot area (%.4f in colour)", c.Name, share)
		}
	}
	if len(sheetShot.console) > 0 || len(sheetShot.requests) > 0 {
		t.Errorf("the charts logged %q and fetched %q", sheetShot.console, sheetShot.requests)
	}
}
