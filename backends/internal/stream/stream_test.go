package stream

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
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

// The client's own limits are the client's: a socket refused for want of
// a file is not a server that cannot be reached, and the words say what
// to do; a refused connection is still the server's absence.
func TestClientLimitsAreNotTheServers(t *testing.T) {
	url := "http://127.0.0.1:8080/completion"
	dial := func(errno syscall.Errno) error {
		return fmt.Errorf("Post %q: %w", url, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", errno)})
	}
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		err := Describe(dial(errno), url)
		if !errors.Is(err, backends.ErrClient) || errors.Is(err, backends.ErrUnreachable) || !strings.Contains(err.Error(), "this process's limit, not the server's") {
			t.Errorf("%v: %v", errno, err)
		}
	}
	refused := Describe(fmt.Errorf("Post %q: %w", url, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), url)
	if !errors.Is(refused, backends.ErrUnreachable) || errors.Is(refused, backends.ErrClient) {
		t.Errorf("refused: %v", refused)
	}
}
