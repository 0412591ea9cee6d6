package document

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestUnescapeNonASCII: escapes of characters past ASCII become their
// UTF-8 bytes (a surrogate pair one character); ASCII escapes, lone
// surrogates, escaped backslashes and malformed escapes stay as they were.
func TestUnescapeNonASCII(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"plain"}`, `{"a":"plain"}`},
		{`{"a":"\u65e5\u672c"}`, `{"a":"日本"}`},
		{`{"\u00e9":"caf\u00E9"}`, `{"é":"café"}`},
		{`{"a":"\ud83d\ude00!"}`, `{"a":"😀!"}`},
		{`{"a":"\u0022\u005c\u000a\u0041"}`, `{"a":"\u0022\u005c\u000a\u0041"}`},
		{`{"a":"\ud800x"}`, `{"a":"\ud800x"}`},
		{`{"a":"\ude00\ud83d"}`, `{"a":"\ude00\ud83d"}`},
		{`{"a":"\\u00e9"}`, `{"a":"\\u00e9"}`},
		{`{"a":"\\\u00e9"}`, `{"a":"\\é"}`},
		{`{"a":"\u00g9"}`, `{"a":"\u00g9"}`},
		{`{"a":"\u00e`, `{"a":"\u00e`},
		{`{"a":"x\`, `{"a":"x\`},
	} {
		if got := string(UnescapeNonASCII([]byte(tc.in))); got != tc.want {
			t.Errorf("UnescapeNonASCII(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	b := []byte(`{"a":"\u0041"}`)
	if got := UnescapeNonASCII(b); &got[0] != &b[0] {
		t.Error("nothing to rewrite, yet a copy")
	}
}

// asciiJSON encodes v as JSON with every non-ASCII character escaped, as
// Python's json.dumps does.
func asciiJSON(v any) []byte {
	b, _ := json.Marshal(v)
	var out strings.Builder
	for _, r := range string(b) {
		switch {
		case r < utf8.RuneSelf:
			out.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return []byte(out.String())
}

// FuzzUnescapeNonASCII: the text keeps its JSON value (or stays invalid),
// never grows, and a second pass changes nothing.
func FuzzUnescapeNonASCII(f *testing.F) {
	for _, s := range []string{`{"a":"\u65e5"}`, `["\ud83d\ude00","\\u00e9","\ud800"]`, `{"k":"\u0022"}`, `"\\\u00e9\\"`} {
		f.Add([]byte(s))
	}
	f.Add(asciiJSON(map[string]any{"名前": "日本語のテキスト 😀", "n": 1, "l": []any{"é", "\x01", `\`}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := UnescapeNonASCII(b)
		if len(out) > len(b) {
			t.Fatalf("grew: %q → %q", b, out)
		}
		if again := UnescapeNonASCII(out); string(again) != string(out) {
			t.Fatalf("not idempotent: %q → %q → %q", b, out, again)
		}
		var v1, v2 any
		e1, e2 := json.Unmarshal(b, &v1), json.Unmarshal(out, &v2)
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("validity changed: %q (%v) → %q (%v)", b, e1, out, e2)
		}
		if e1 == nil && !reflect.DeepEqual(v1, v2) {
			t.Fatalf("value changed: %q → %q", b, out)
		}
	})
}
