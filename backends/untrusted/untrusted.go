// Package untrusted makes outside text safe to show and to store: a
// server's error messages, version and model names, a file's fields, a
// profile's words. Every such text reaches a terminal, a CSV or TOML
// field or a report through this package (DESIGN.md), which
//
//   - removes terminal escape sequences whole (CSI, OSC, DCS and the
//     rest: a server must not set a window title or clear a screen),
//     every other control character, and the bidirectional overrides
//     that make a terminal show text in another order than it is;
//   - replaces bytes that are not UTF-8;
//   - redacts a secret the caller names (an API key, and so its
//     "Bearer" form), before the text is bounded, so that no cut can
//     leave a prefix of it;
//   - bounds the length.
//
// It imports nothing of tokentop, so that every layer can use it.
package untrusted

import (
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLine bounds one line of outside text, in bytes, once cleaned: an
// error message or a name, never a page.
const MaxLine = 500

// MaxText bounds a multi-line text (a prompt read back, a description).
const MaxText = 64 << 10

// Redacted stands in for a secret.
const Redacted = "[redacted]"

// MinSecret is the shortest secret that is redacted: a key of one to
// three characters would blank out every such run of letters in every
// message, and is no secret worth the name.
const MinSecret = 4

// Line returns s as one line: escape sequences and control characters
// removed, line breaks and tabs made spaces, each secret replaced by
// Redacted, at most MaxLine bytes (cut with "…").
func Line(s string, secrets ...string) string {
	return bound(redact(clean(s, false), secrets), MaxLine)
}

// Text is Line for text of several lines: line breaks and tabs stay,
// and it is bounded by MaxText.
func Text(s string, secrets ...string) string {
	return bound(redact(clean(s, true), secrets), MaxText)
}

// clean removes escape sequences and control characters; multiline
// keeps '\n' and '\t' (a "\r\n" becomes '\n').
func clean(s string, multiline bool) string {
	if plainASCII(s, multiline) { // the common case: nothing to copy
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x1b:
			size = escapeLength(s[i:])
		case r == '\n' || r == '\t':
			if multiline {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case r == '\r':
			if !multiline {
				b.WriteByte(' ')
			} else if !strings.HasPrefix(s[i+1:], "\n") {
				b.WriteByte('\n')
			}
		case r == '\u2028' || r == '\u2029': // line and paragraph separators
			if multiline {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		case unicode.IsControl(r) || bidiControl(r):
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// plainASCII reports whether s is printable ASCII (with '\n' and '\t'
// where multiline allows them).
func plainASCII(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b < 0x7f || multiline && (b == '\n' || b == '\t') {
			continue
		}
		return false
	}
	return true
}

// bidiControl reports the characters that reorder how a terminal shows
// the text around them (the embeddings, overrides and isolates).
func bidiControl(r rune) bool {
	return r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' || r == '\u200e' || r == '\u200f' || r == '\u061c'
}

// escapeLength is the length of the escape sequence s starts with (s[0]
// is ESC), by ECMA-48: a CSI runs to its final byte, a string command
// (OSC, DCS, SOS, PM, APC) to its terminator (ST or BEL), any other
// escape is its intermediates and final byte. One cut off by the end
// of s runs to the end.
func escapeLength(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte
		for i := 2; i < len(s); i++ {
			switch c := s[i]; {
			case c >= 0x40 && c <= 0x7e:
				return i + 1
			case c < 0x20 || c > 0x7e:
				return i // not a CSI byte: the sequence is broken here
			}
		}
		return len(s)
	case ']', 'P', 'X', '^', '_': // string commands
		for i := 2; i < len(s); i++ {
			switch {
			case s[i] == 0x07:
				return i + 1
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2
			}
		}
		return len(s)
	}
	i := 1
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f { // intermediates
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// redact replaces each secret of at least MinSecret bytes in s, a
// cleaned text: the secret is cleaned alike, so that one with odd bytes
// is found as the text shows it, and a match never splits a rune.
func redact(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret = clean(secret, false); len(secret) >= MinSecret {
			s = strings.ReplaceAll(s, secret, Redacted)
		}
	}
	return s
}

// bound cuts s to at most n bytes on a rune boundary, marking the cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// CleanAll cleans, in place, every string that v (a pointer) holds: in
// structs, pointers, slices, arrays, maps (keys and values) and
// interfaces. A struct field tagged `untrusted:"text"` is cleaned as
// Text, every other string as Line. It is for whole documents read from
// disk (a session manifest), so that a field added later is never
// missed.
func CleanAll(v any) {
	cleanValue(reflect.ValueOf(v), false)
}

func cleanValue(v reflect.Value, multiline bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Interface {
			// A value held in an interface cannot be set in place.
			inner := reflect.New(v.Elem().Type()).Elem()
			inner.Set(v.Elem())
			cleanValue(inner, multiline)
			if v.CanSet() {
				v.Set(inner)
			}
			return
		}
		cleanValue(v.Elem(), multiline)
	case reflect.String:
		if !v.CanSet() {
			return
		}
		if multiline {
			v.SetString(Text(v.String()))
		} else {
			v.SetString(Line(v.String()))
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				cleanValue(v.Field(i), t.Field(i).Tag.Get("untrusted") == "text")
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			cleanValue(v.Index(i), multiline)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		cleaned := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			key := reflect.New(v.Type().Key()).Elem()
			key.Set(iter.Key())
			cleanValue(key, false)
			value := reflect.New(v.Type().Elem()).Elem()
			value.Set(iter.Value())
			cleanValue(value, multiline)
			cleaned.SetMapIndex(key, value)
		}
		if v.CanSet() {
			v.Set(cleaned)
		} else {
			v.Clear()
			iter := cleaned.MapRange()
			for iter.Next() {
				v.SetMapIndex(iter.Key(), iter.Value())
			}
		}
	}
}
