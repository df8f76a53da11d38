package stream

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 3 ", 3 * time.Second},
		{"-5", 0},
		{"soon", 0},
		{"99999999999", maxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), maxRetryAfter},
	} {
		if got := retryAfter(c.header, now); got != c.want {
			t.Errorf("Retry-After %q: %v, want %v", c.header, got, c.want)
		}
	}
}

// FuzzRetryAfter: whatever the header, the wait is within [0, an hour].
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "1e9", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		if got := retryAfter(header, time.Now()); got < 0 || got > maxRetryAfter {
			t.Fatalf("%q: %v", header, got)
		}
	})
}
