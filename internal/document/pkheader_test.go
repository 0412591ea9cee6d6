package document

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode/utf8"
)

func str(s string) PKValue           { return PKValue{Kind: String, String: s} }
func num(f float64) PKValue          { return PKValue{Kind: Number, Number: f} }
func boolean(b bool) PKValue         { return PKValue{Kind: Bool, Bool: b} }
func null() PKValue                  { return PKValue{Kind: Null} }
func undefined() PKValue             { return PKValue{Kind: Undefined} }
func key(vs ...PKValue) PartitionKey { return PartitionKey(vs) }

func TestParsePKHeader(t *testing.T) {
	tests := []struct {
		in   string
		want PartitionKey
	}{
		// Protocol §5.1 examples.
		{`["abc"]`, key(str("abc"))},
		{`["\u00dcn\u00ef\U0001f600"]`, key(str("Ünï😀"))},   // Go SDK
		{`["\u00dcn\u00ef\ud83d\ude00"]`, key(str("Ünï😀"))}, // JS SDK
		{`[42]`, key(num(42))},
		{`[1e+21]`, key(num(1e21))},
		{`[-123.456]`, key(num(-123.456))},
		{`[true]`, key(boolean(true))},
		{`[false]`, key(boolean(false))},
		{`[null]`, key(null())},
		{`[{}]`, key(undefined())},
		{`["a",true,null]`, key(str("a"), boolean(true), null())},
		{`["a",5]`, key(str("a"), num(5))},
		{`[]`, key()},
		// Go's QuoteToASCII escapes for control characters.
		{`["\a\b\f\n\r\t\v"]`, key(str("\a\b\f\n\r\t\v"))},
		{`["\x01\x7f"]`, key(str("\x01\x7f"))},
		{`["\\\"\'\/"]`, key(str(`\"'/`))},
		{`["\101\060"]`, key(str("A0"))},          // octal, as strconv.Unquote
		{`["\xc3\xa9"]`, key(str("é"))},           // bytes forming UTF-8
		{`["\xff!"]`, key(str("\uFFFD!"))},        // invalid byte, as encoding/json
		{`["\ud800x"]`, key(str("\uFFFDx"))},      // lone high surrogate
		{`["\udc00"]`, key(str("\uFFFD"))},        // lone low surrogate
		{`["\ud83d\u0041"]`, key(str("\uFFFDA"))}, // high + non-low
		{`["\U0010FFFF"]`, key(str("\U0010FFFF"))},
		{"[\"raw é 😀\"]", key(str("raw é 😀"))},
		// Whitespace, numbers.
		{" [ \"a\" ,\t1 , {\n} ] ", key(str("a"), num(1), undefined())},
		{`[-0]`, key(num(0))},
		{`[0.5e-3]`, key(num(0.0005))},
		{`[1E2]`, key(num(100))},
		{`[1e-400]`, key(num(0))},
		{`[123456789012345678901234567890]`, key(num(1.2345678901234568e29))},
		{`["", "", ""]`, key(str(""), str(""), str(""))},
		{`[1,2,3,4]`, key(num(1), num(2), num(3), num(4))}, // count is the caller's business
	}
	for _, tt := range tests {
		got, err := ParsePKHeader(tt.in)
		if err != nil {
			t.Errorf("ParsePKHeader(%q) error %v, want %v", tt.in, err, tt.want)
			continue
		}
		if !got.Equal(tt.want) || got == nil {
			t.Errorf("ParsePKHeader(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParsePKHeaderErrors(t *testing.T) {
	tests := []string{
		``, ` `, `"a"`, `a`, `{}`, `1`, `null`,
		`[`, `[1`, `[1,]`, `[,1]`, `[1 2]`, `["a"`, `]`,
		`[[]]`, `[["a"]]`, `[{"a":1}]`, `[{]`, `[{}`,
		`["a"] x`, `[]]`, `[][]`, `[1]]`,
		`["\q"]`, `["\u12"]`, `["\u12g4"]`, `["\x4"]`, `["\xg0"]`, `["\U0000004"]`,
		`["\U00110000"]`, `["\U0000d800"]`, `["\400"]`, `["\08"]`, `["\0"]`, `["abc\"]`,
		"[\"a\x01\"]", "[\"a\nb\"]", "[\"\xff\"]", "[\"\xc3\"]",
		`[01]`, `[1.]`, `[.5]`, `[1e]`, `[1e+]`, `[+1]`, `[-]`, `[0x10]`,
		`[NaN]`, `[Infinity]`, `[-Infinity]`, `[1e400]`, `[-1e400]`,
		`[tru]`, `[nul]`, `[falsey]`, `[True]`, `[undefined]`,
	}
	for _, in := range tests {
		got, err := ParsePKHeader(in)
		if _, ok := errors.AsType[*PKError](err); !ok {
			t.Errorf("ParsePKHeader(%q) = %v, %v; want *PKError", in, got, err)
		}
	}
}

// TestParsePKHeaderGoQuote checks that whatever the Go SDK sends for a string
// (strconv.QuoteToASCII) parses back to that string.
func TestParsePKHeaderGoQuote(t *testing.T) {
	ins := []string{"", "abc", "Ünï😀", "\a\b\f\n\r\t\v\x00\x01\x1f\x7f", `"'\`, "\u2028\ufeff",
		"\U0010ffff\U00010000", "日本語", "a\u0080b", "tab\there"}
	for r := rune(0); r < 0x400; r++ {
		ins = append(ins, string(r))
	}
	for _, s := range ins {
		h := "[" + strconv.QuoteToASCII(s) + "]"
		got, err := ParsePKHeader(h)
		if err != nil || !got.Equal(key(str(s))) {
			t.Errorf("ParsePKHeader(%q) = %v, %v; want [%q]", h, got, err, s)
		}
	}
}

func TestPartitionKeyString(t *testing.T) {
	tests := []struct {
		pk   PartitionKey
		want string
	}{
		{key(), `[]`},
		{key(str("a"), num(1), boolean(true), null(), undefined()), `["a",1,true,null,{}]`},
		{key(boolean(false)), `[false]`},
		{key(str("Ünï😀")), `["\u00dcn\u00ef\ud83d\ude00"]`}, // as the JS SDK sends it
		{key(str("q\"b\\s/\b\f\n\r\t\x01\x7f")), `["q\"b\\s/\b\f\n\r\t\u0001\u007f"]`},
		{key(str("bad\xffutf8")), `["bad\ufffdutf8"]`},
		{key(num(42)), `[42]`},
		{key(num(-123.456)), `[-123.456]`},
		{key(num(1e21)), `[1e+21]`},
		{key(num(1e20)), `[100000000000000000000]`},
		{key(num(123e18)), `[123000000000000000000]`},
		{key(num(1e-6)), `[0.000001]`},
		{key(num(1e-7)), `[1e-7]`},
		{key(num(1.5e-7)), `[1.5e-7]`},
		{key(num(-2.5e300)), `[-2.5e+300]`},
		{key(num(0.1)), `[0.1]`},
		{key(num(1.25)), `[1.25]`},
		{key(num(math.Copysign(0, -1))), `[0]`},
		{key(num(math.MaxFloat64)), `[1.7976931348623157e+308]`},
		{key(num(5e-324)), `[5e-324]`},
		{key(num(math.NaN()), num(math.Inf(1))), `[null,null]`},
		{key(PKValue{Kind: 99}), `[{}]`},
	}
	for _, tt := range tests {
		if got := tt.pk.String(); got != tt.want {
			t.Errorf("%#v.String() = %s, want %s", tt.pk, got, tt.want)
		}
	}
}

// TestAppendNumberMatchesJSON checks appendNumber against Go's encoding/json,
// which prints float64 as JavaScript does.
func TestAppendNumberMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fs := []float64{1, -1, 0.1, 1e20, 1e21, 1e-6, 1e-7, 999999999999999900000, 123456.789, 1 << 53}
	for range 20000 {
		fs = append(fs, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)), float64(r.Int64N(1e12)))
	}
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			continue
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendNumber(nil, f); string(got) != string(want) {
			t.Errorf("appendNumber(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestPKStringRoundTrip(t *testing.T) {
	keys := []PartitionKey{
		key(), key(str("")), key(str("Ünï😀"), num(-0.000123), boolean(false)),
		key(null(), undefined(), str("\x00\x1f\"\\")), key(num(1e300), num(-5e-324), num(0.1)),
		key(str("\u2028\uffff\U0010ffff")),
	}
	for _, pk := range keys {
		s := pk.String()
		got, err := ParsePKHeader(s)
		if err != nil || !got.Equal(pk) {
			t.Errorf("ParsePKHeader(%s) = %v, %v; want %v", s, got, err, pk)
		}
		if !json.Valid([]byte(s)) {
			t.Errorf("%v.String() = %s, not valid JSON", pk, s)
		}
		for i := range len(s) {
			if s[i] >= 0x7f || s[i] < 0x20 {
				t.Errorf("%v.String() = %q has non-ASCII or control byte", pk, s)
				break
			}
		}
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b PartitionKey
		want bool
	}{
		{key(), key(), true},
		{nil, key(), true},
		{key(str("a")), key(str("a")), true},
		{key(str("a")), key(str("b")), false},
		{key(str("1")), key(num(1)), false},
		{key(num(1)), key(num(1.0)), true},
		{key(num(0)), key(num(math.Copysign(0, -1))), true},
		{key(num(math.NaN())), key(num(math.NaN())), false},
		{key(boolean(true)), key(boolean(false)), false},
		{key(null()), key(undefined()), false},
		{key(undefined()), key(undefined()), true},
		{key(null()), key(null()), true},
		{key(str("a")), key(str("a"), str("b")), false},
		{key(PKValue{Kind: Null, String: "ignored"}), key(null()), true},
	}
	for _, tt := range tests {
		if got := tt.a.Equal(tt.b); got != tt.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := tt.b.Equal(tt.a); got != tt.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}

func FuzzParsePKHeader(f *testing.F) {
	for _, s := range []string{
		`["abc"]`, `["\u00dcn\u00ef\U0001f600"]`, `["\u00dcn\u00ef\ud83d\ude00"]`, `[42]`,
		`[1e+21]`, `[-123.456]`, `[true]`, `[null]`, `[{}]`, `["a",true,null]`, `[]`,
		`["\a\v\x01\xff\101"]`, `["\ud800"]`, `[[1]]`, `[1e400]`, `["a"] x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		pk, err := ParsePKHeader(h)
		if err != nil {
			if _, ok := errors.AsType[*PKError](err); !ok {
				t.Fatalf("ParsePKHeader(%q) error %T %v, want *PKError", h, err, err)
			}
		} else {
			for _, v := range pk {
				if v.Kind == String && !utf8.ValidString(v.String) {
					t.Fatalf("ParsePKHeader(%q) = %q, invalid UTF-8", h, v.String)
				}
			}
			s := pk.String()
			again, err := ParsePKHeader(s)
			if err != nil || !again.Equal(pk) {
				t.Fatalf("ParsePKHeader(%q) = %v, %v; want %v (from %q)", s, again, err, pk, h)
			}
			if again.String() != s {
				t.Fatalf("String() not stable: %s then %s", s, again.String())
			}
		}
		// Whatever the Go SDK sends for a string parses back to it.
		if utf8.ValidString(h) {
			q := "[" + strconv.QuoteToASCII(h) + "]"
			got, err := ParsePKHeader(q)
			if err != nil || !got.Equal(key(str(h))) {
				t.Fatalf("ParsePKHeader(%s) = %v, %v; want [%q]", q, got, err, h)
			}
		}
	})
}

func BenchmarkParsePKHeader(b *testing.B) {
	for _, bc := range []struct{ name, h string }{
		{"string", `["tenant-42"]`},
		{"escaped", `["\u00dcn\u00ef\U0001f600"]`},
		{"hierarchical", `["contoso",42,true]`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParsePKHeader(bc.h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestPlainStrTable(t *testing.T) {
	for c := range 256 {
		want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
		if got := plainStr[c] == 1; got != want {
			t.Errorf("plainStr[%#02x] = %v, want %v", c, got, want)
		}
	}
}
