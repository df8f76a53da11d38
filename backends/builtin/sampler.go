package builtin

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Sampler picks the next token from logits. Its cost is part of what
// tokentop measures (greedy vs sampling), so each strategy does the least
// work that is exact, over a vocabulary of V tokens:
//
//   - greedy: one argmax pass, O(V), no softmax.
//   - temperature: softmax of logits/T, O(V), then one inverse-CDF draw, O(V).
//   - top-k: softmax, then quickselect of the k most likely, O(V) expected,
//     and a draw over those k; no sort.
//   - min-p: softmax, one pass keeping p >= min_p·p_max, O(V); no sort.
//   - top-p: softmax, a pre-filter that drops tokens that cannot be in the
//     nucleus (p < (1-top_p)/(V-1)), then a sort of the m survivors only,
//     O(V + m log m).
//
// Filters compose in llama.cpp's order: top-k, then top-p, then min-p.
type Sampler struct {
	temperature float32
	topK        int
	topP, minP  float32
	rng         *rand.Rand
	probs       []float32
	cand        []int32
}

// NewSampler allocates buffers for a vocabulary, once.
func NewSampler(vocab int) *Sampler {
	return &Sampler{probs: make([]float32, vocab), cand: make([]int32, vocab), rng: rand.New(rand.NewPCG(0, 0))}
}

// Configure sets the strategy and reseeds, so a trial is reproducible from
// its seed alone.
func (s *Sampler) Configure(temperature float64, topK int, topP, minP float64, seed int64) {
	s.temperature, s.topK, s.topP, s.minP = float32(temperature), topK, float32(topP), float32(minP)
	s.rng = rand.New(rand.NewPCG(uint64(seed), 0x62756c7469696e))
}

// Sample returns the next token.
func (s *Sampler) Sample(logits []float32) int {
	if s.temperature == 0 {
		return argmax(logits)
	}
	probs := s.probs[:len(logits)]
	inv := 1 / s.temperature
	maxLogit := logits[0]
	for _, v := range logits[1:] {
		maxLogit = max(maxLogit, v)
	}
	var sum float32
	for i, v := range logits {
		e := float32(math.Exp(float64((v - maxLogit) * inv)))
		probs[i] = e
		sum += e
	}
	for i := range probs {
		probs[i] /= sum
	}

	cand := s.cand[:0]
	if s.topP > 0 && s.topP < 1 && (s.topK <= 0 || s.topK >= len(probs)) {
		// Only tokens above this cutoff can be inside the nucleus.
		cutoff := (1 - s.topP) / float32(len(probs)-1)
		for i, p := range probs {
			if p >= cutoff {
				cand = append(cand, int32(i))
			}
		}
	} else {
		for i := range probs {
			cand = append(cand, int32(i))
		}
	}
	if s.topK > 0 && s.topK < len(cand) {
		selectTopK(cand, probs, s.topK)
		cand = cand[:s.topK]
	}
	if s.topP > 0 && s.topP < 1 {
		slices.SortFunc(cand, func(a, b int32) int {
			switch pa, pb := probs[a], probs[b]; {
			case pa > pb:
				return -1
			case pa < pb:
				return 1
			}
			return int(a - b)
		})
		var mass float32
		var total float32
		for _, c := range cand {
			total += probs[c]
		}
		for i, c := range cand {
			mass += probs[c]
			if mass >= s.topP*total {
				cand = cand[:i+1]
				break
			}
		}
	}
	if s.minP > 0 {
		var pmax float32
		for _, c := range cand {
			pmax = max(pmax, probs[c])
		}
		kept := cand[:0]
		for _, c := range cand {
			if probs[c] >= s.minP*pmax {
				kept = append(kept, c)
			}
		}
		cand = kept
	}
	var total float32
	for _, c := range cand {
		total += probs[c]
	}
	r := s.rng.Float32() * total
	var acc float32
	for _, c := range cand {
		acc += probs[c]
		if r < acc {
			return int(c)
		}
	}
	return int(cand[len(cand)-1]) // rounding left r at the very top
}

// argmax returns the first index of the largest value.
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// selectTopK reorders idx so its first k entries are the k most probable
// (quickselect, O(len) expected; ties broken by the lower index so the
// result does not depend on the input order).
func selectTopK(idx []int32, probs []float32, k int) {
	before := func(a, b int32) bool {
		return probs[a] > probs[b] || (probs[a] == probs[b] && a < b)
	}
	lo, hi := 0, len(idx)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		idx[mid], idx[hi] = idx[hi], idx[mid]
		pivot := idx[hi]
		store := lo
		for i := lo; i < hi; i++ {
			if before(idx[i], pivot) {
				idx[i], idx[store] = idx[store], idx[i]
				store++
			}
		}
		idx[store], idx[hi] = idx[hi], idx[store]
		switch {
		case store == k-1 || store == k:
			return
		case store < k:
			lo = store + 1
		default:
			hi = store - 1
		}
	}
}
