package session

import (
	"os"
	"time"
)

// replaceFile renames from over to. On Windows a rename over a file that
// another process (a reader, a virus scanner, the search indexer) holds
// open fails for a moment with a sharing error; such failures are retried
// for up to budget, as Go's own tools do.
func replaceFile(root *os.Root, from, to string) error {
	return renameRetrying(root.Rename, from, to, transientRenameError, 2*time.Second)
}

func renameRetrying(rename func(from, to string) error, from, to string, transient func(error) bool, budget time.Duration) error {
	deadline := time.Now().Add(budget)
	wait := time.Millisecond
	for {
		err := rename(from, to)
		if err == nil || !transient(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}
