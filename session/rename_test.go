package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRenameRetriesOnlyTransientFailures(t *testing.T) {
	busy := errors.New("the file is open in another process")
	calls := 0
	flaky := func(string, string) error {
		calls++
		if calls < 4 {
			return busy
		}
		return nil
	}
	isBusy := func(err error) bool { return errors.Is(err, busy) }
	if err := renameRetrying(flaky, "a", "b", isBusy, time.Second); err != nil || calls != 4 {
		t.Errorf("%v after %d calls", err, calls)
	}
	calls = 0
	gone := errors.New("no such file")
	if err := renameRetrying(func(string, string) error { calls++; return gone }, "a", "b", isBusy, time.Second); err != gone || calls != 1 {
		t.Errorf("a lasting failure: %v after %d calls", err, calls)
	}
	// Past the budget it gives up (a loop that did not would hang the
	// test): its last error, not a success.
	if err := renameRetrying(func(string, string) error { return busy }, "a", "b", isBusy, 20*time.Millisecond); err != busy {
		t.Errorf("past the budget: %v", err)
	}
}

func TestReplaceFileOverAnOpenFile(t *testing.T) {
	dir := t.TempDir()
	to, from := filepath.Join(dir, "s.toml"), filepath.Join(dir, ".s.toml.tmp")
	os.WriteFile(to, []byte("old"), 0o644)
	os.WriteFile(from, []byte("new"), 0o644)
	// A reader holds the old file for a moment: on Windows the rename
	// waits it out, elsewhere it goes through at once.
	reader, err := os.Open(to)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() { reader.Close() })
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := replaceFile(root, filepath.Base(from), filepath.Base(to)); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(to); string(data) != "new" {
		t.Errorf("%q", data)
	}
}
