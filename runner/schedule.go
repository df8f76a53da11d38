package runner

import "math/rand/v2"

// schedule decides the order of the arms in each round. It is pure: the
// same order, seed and arm count give the same rounds, which is what lets
// the manifest's seed stand for the whole order.
//
//   - "alternate": the declared order every round.
//   - "shuffle": every block of len(arms) rounds puts each arm first
//     exactly once (in a seeded random order), and the other places of
//     each round are a seeded shuffle. A server's prompt cache, or any
//     warm-up effect that favours the first or a later request of a
//     round, so lands on every arm alike, while no fixed pattern can line
//     up with the arms.
type schedule struct {
	shuffle bool
	rng     *rand.Rand
	firsts  []int // the arms still to go first in this block
	order   []int
}

func newSchedule(order string, seed int64, arms int) *schedule {
	return &schedule{shuffle: order == "shuffle", rng: rand.New(rand.NewPCG(uint64(seed), 0)), order: make([]int, arms)}
}

// next returns the arm indices of the next round, in running order. The
// slice is reused by the following call.
func (s *schedule) next() []int {
	for i := range s.order {
		s.order[i] = i
	}
	if !s.shuffle || len(s.order) < 2 {
		return s.order
	}
	if len(s.firsts) == 0 {
		s.firsts = s.rng.Perm(len(s.order))
	}
	first := s.firsts[0]
	s.firsts = s.firsts[1:]
	s.order[0], s.order[first] = first, 0
	rest := s.order[1:]
	s.rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	return s.order
}
