package runner

import (
	"context"
	"sync"
)

// Pause lets a front end hold a run between trials. A trial in flight
// always finishes: stopping one midway would record a degraded trial that
// the user did not cause.
type Pause struct {
	mu     sync.Mutex
	resume chan struct{} // nil while running; closed by Resume
}

// Hold makes the run wait before its next trial.
func (p *Pause) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// Resume lets a held run go on.
func (p *Pause) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// Held reports whether the run is held.
func (p *Pause) Held() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resume != nil
}

// wait returns once the run is not held or ctx is done. A nil Pause
// never holds.
func (p *Pause) wait(ctx context.Context) {
	if p == nil {
		return
	}
	p.mu.Lock()
	resume := p.resume
	p.mu.Unlock()
	if resume == nil {
		return
	}
	select {
	case <-resume:
	case <-ctx.Done():
	}
}
