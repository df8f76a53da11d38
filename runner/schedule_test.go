package runner

import (
	"slices"
	"testing"
)

// TestShuffleBalancesWhoGoesFirst: with a prompt cache or a warm-up
// effect, the first place of a round differs from the others, so every
// arm must take it equally often; the rest of the order is shuffled, and
// the same seed gives the same rounds.
func TestShuffleBalancesWhoGoesFirst(t *testing.T) {
	const arms, rounds = 3, 300
	s, again := newSchedule("shuffle", 42, arms), newSchedule("shuffle", 42, arms)
	first := make([]int, arms)
	place := make([][]int, arms) // place[arm][position]
	for i := range place {
		place[i] = make([]int, arms)
	}
	orders := map[string]bool{}
	for round := 0; round < rounds; round++ {
		order := s.next()
		if other := again.next(); !slices.Equal(order, other) {
			t.Fatalf("round %d: %v and %v from the same seed", round, order, other)
		}
		if sorted := slices.Sorted(slices.Values(order)); !slices.Equal(sorted, []int{0, 1, 2}) {
			t.Fatalf("round %d: %v is not an order of the arms", round, order)
		}
		first[order[0]]++
		for pos, arm := range order {
			place[arm][pos]++
		}
		orders[string(rune('0'+order[0]))+string(rune('0'+order[1]))+string(rune('0'+order[2]))] = true
		if (round+1)%arms == 0 && (first[0] != first[1] || first[1] != first[2]) {
			t.Fatalf("after round %d the first places are %v", round+1, first)
		}
	}
	if len(orders) != 6 {
		t.Errorf("only %d of the 6 orders of 3 arms appeared", len(orders))
	}
	for arm, counts := range place {
		for pos, n := range counts {
			if n < 70 || n > 130 { // 100 expected; binomial sd ~8 for the later places
				t.Errorf("arm %d took place %d %d times in %d rounds", arm, pos+1, n, rounds)
			}
		}
	}
	a, b := newSchedule("shuffle", 42, arms), newSchedule("shuffle", 43, arms)
	same := 0
	for range 12 {
		if slices.Equal(a.next(), b.next()) {
			same++
		}
	}
	if same == 12 {
		t.Error("another seed gave the same rounds")
	}
}

func TestAlternateKeepsTheDeclaredOrder(t *testing.T) {
	s := newSchedule("alternate", 42, 3)
	for range 5 {
		if got := s.next(); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("order %v", got)
		}
	}
	if got := newSchedule("shuffle", 1, 1).next(); !slices.Equal(got, []int{0}) {
		t.Errorf("one arm: %v", got)
	}
}
