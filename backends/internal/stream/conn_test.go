package stream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// More requests in flight at once than a closed loop's most (an open
// loop's, into a slow server) all go out again on the connections the
// first ones left: none is dropped from the pool to be opened again, its
// handshake in the next request's TTFT.
func TestEveryConnectionInFlightIsKeptForTheNextRequests(t *testing.T) {
	const inFlight = 300 // past backends.MaxConcurrency, the pool's old size
	var arrived atomic.Int32
	var release chan struct{}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each batch's requests are all held until the last arrives, so
		// each needs a connection of its own.
		if arrived.Add(1)%inFlight == 0 {
			close(release)
		}
		<-release
		io.WriteString(w, "ok")
	}))
	defer server.Close()
	c := NewConn("", "")
	defer c.pooled.CloseIdleConnections()
	batch := func() (reused int) {
		release = make(chan struct{})
		var wg sync.WaitGroup
		var n atomic.Int32
		for range inFlight {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodGet, server.URL, nil)
				resp, wasReused, err := send(c.pooled, req)
				if err != nil {
					t.Error(err)
					return
				}
				// The body read to its end puts the connection back
				// before the read returns.
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if wasReused {
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return int(n.Load())
	}
	if got := batch(); got != 0 {
		t.Fatalf("first batch: %d requests on reused connections, want 0", got)
	}
	if got := batch(); got != inFlight {
		t.Errorf("second batch: %d of %d requests on the first batch's connections", got, inFlight)
	}
}
