package profiles

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/BurntSushi/toml"
)

// keyLines remembers where keys sit in a profile's source. The toml library
// reports lines only for syntax errors, so unknown keys and bad values are
// located by this small scan of table headers and `key =` lines. It
// understands the shapes profiles use (tables, [[arms]], bare or quoted
// keys); anything else simply gets no line number.
type keyLines []keyLine

type keyLine struct {
	table string // "" for top level, "models", "arms"
	index int    // which [[table]] block, -1 for plain tables
	key   string
	line  int
}

func scanKeyLines(src []byte) keyLines {
	var out keyLines
	table, index := "", -1
	arrayCounts := map[string]int{}
	array, arrayIndex := "", -1 // the last [[table]] block
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "[["):
			table = strings.TrimSpace(strings.Trim(stripComment(line), "[] "))
			index = arrayCounts[table]
			arrayCounts[table]++
			array, arrayIndex = table, index
		case strings.HasPrefix(line, "["):
			table, index = strings.TrimSpace(strings.Trim(stripComment(line), "[] ")), -1
			// [arms.options] belongs to the [[arms]] block above it.
			if array != "" && strings.HasPrefix(table, array+".") {
				index = arrayIndex
			}
		default:
			eq := strings.IndexByte(line, '=')
			if eq <= 0 || strings.HasPrefix(line, "#") {
				continue
			}
			key := strings.Trim(strings.TrimSpace(line[:eq]), `"'`)
			out = append(out, keyLine{table: table, index: index, key: key, line: n})
		}
	}
	return out
}

func stripComment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		return s[:i]
	}
	return s
}

// find returns the line of key (a full path such as ["arms", "top_k"]) in
// the index-th block of an array table, or in any block when index < 0.
// It returns 0 when the key cannot be found.
func (kl keyLines) find(key toml.Key, index int) int {
	if len(key) == 0 {
		return 0
	}
	table, name := strings.Join(key[:len(key)-1], "."), key[len(key)-1]
	for _, k := range kl {
		if k.key == name && k.table == table && (index < 0 || k.index == index) {
			return k.line
		}
		// A dotted key written at top level, e.g. models.ollama = "x".
		if k.table == "" && k.key == key.String() {
			return k.line
		}
	}
	return 0
}
