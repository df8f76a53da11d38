package htmlreport

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// screenshot renders file in a real browser with networking off (every
// request goes to a dead proxy) and returns the picture and the browser's
// log, where console errors and failed loads appear.
func screenshot(t *testing.T, chromium, file string, width, height int) (image.Image, string) {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
		"--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--enable-logging=stderr", "--v=0", "--user-data-dir="+filepath.Join(dir, "profile"),
		fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+shot, "file://"+file)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", chromium, err, log.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, log.String())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img, log.String()
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

var consoleTrouble = regexp.MustCompile(`(?i)CONSOLE.*(error|uncaught)|net::ERR_|Failed to load`)

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
	// A laptop and a phone: the page renders, fills the window and logs
	// no error or failed load.
	for _, size := range [][2]int{{1280, 2000}, {390, 2000}} {
		img, log := screenshot(t, chromium, report, size[0], size[1])
		if b := img.Bounds(); b.Dx() != size[0] || b.Dy() != size[1] {
			t.Errorf("a %dx%d window gave a %v screenshot", size[0], size[1], b)
		}
		if share := share(img, img.Bounds(), inked); share < 0.02 {
			t.Errorf("at %d wide the page is blank (%.3f inked)", size[0], share)
		}
		if m := consoleTrouble.FindString(log); m != "" {
			t.Errorf("at %d wide the browser logged %q:\n%s", size[0], m, log)
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
	img, log := screenshot(t, chromium, charts, boxW, boxH*len(r.Charts))
	for i, c := range r.Charts {
		// The plot area, inside the axes: curves and bars, not labels.
		box := image.Rect(boxW/8, i*boxH+boxH/8, boxW*7/8, (i+1)*boxH-boxH/5)
		if share := share(img, box, coloured); share < 0.002 {
			t.Errorf("the %s chart drew no data in its plot area (%.4f in colour)", c.Name, share)
		}
	}
	if m := consoleTrouble.FindString(log); m != "" {
		t.Errorf("the charts logged %q", m)
	}
}
