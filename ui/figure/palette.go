package figure

// ArmMark is how the i-th arm (or session column) is told apart in every
// picture. Hue alone would not survive NO_COLOR, grayscale printing or a
// colour-blind reader, so each arm also has a glyph (the dashboard's
// curves, the report's markers) and a dash pattern (the report's lines).
type ArmMark struct {
	ANSI  string    // the terminal colour, an ANSI index
	Hex   string    // the same hue, dark enough to read on white paper
	Glyph string    // the convergence curve's glyph in the terminal
	Dash  []float64 // points on, off, …; nil is a solid line
}

// armMarks: past five arms the hues repeat; glyphs and dashes do not.
var armMarks = []ArmMark{
	{"12", "#1f5fbf", "─", nil},
	{"13", "#a8329e", "·", []float64{1.5, 2}},
	{"11", "#9a7400", "=", []float64{6, 3}},
	{"14", "#00838f", "~", []float64{6, 2, 1.5, 2}},
	{"10", "#2e7d32", "+", []float64{3, 3}},
	{"12", "#1f5fbf", "*", []float64{10, 3}},
	{"13", "#a8329e", "#", []float64{10, 3, 1.5, 3}},
	{"11", "#9a7400", "o", []float64{1.5, 5}},
	{"14", "#00838f", "x", []float64{6, 6}},
	{"10", "#2e7d32", "%", []float64{10, 3, 1.5, 3, 1.5, 3}},
}

// Arm is the i-th arm's mark; the list wraps past its end.
func Arm(i int) ArmMark { return armMarks[i%len(armMarks)] }

// Arms is how many arms get distinct marks before they repeat.
func Arms() int { return len(armMarks) }
