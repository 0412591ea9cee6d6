package document

import (
	"strings"
	"testing"
)

func TestFixLoneSurrogates(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"id":"a"}`, `{"id":"a"}`},
		{`{"s":"\ud800"}`, `{"s":"\ufffd"}`},
		{`{"s":"\uDC00x"}`, `{"s":"\ufffdx"}`},
		{`{"s":"\ud83d\ude00"}`, `{"s":"\ud83d\ude00"}`},             // a pair
		{`{"s":"\ud83d\ud83d\ude00"}`, `{"s":"\ufffd\ud83d\ude00"}`}, // a lone high, then a pair
		{`{"s":"\\ud800"}`, `{"s":"\\ud800"}`},                       // an escaped backslash, then text
		{`{"s":"\\\ud800"}`, `{"s":"\\\ufffd"}`},
		{`{"s":"\u00e9\ud800"}`, `{"s":"\u00e9\ufffd"}`},
		{`{"s":"\ud80`, `{"s":"\ud80`}, // truncated: left to the parser
		{`{"s":"\ud800\u0041"}`, `{"s":"\ufffd\u0041"}`},
	} {
		in := []byte(tt.in)
		if got := string(FixLoneSurrogates(in)); got != tt.want {
			t.Errorf("FixLoneSurrogates(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if string(in) != tt.in {
			t.Errorf("FixLoneSurrogates changed its argument %s", tt.in)
		}
	}
}

// TestParseItemFixesLoneSurrogates: the Item's body holds \ufffd where the
// client sent a lone surrogate's escape, as its id decodes it.
func TestParseItemFixesLoneSurrogates(t *testing.T) {
	it, err := ParseItem([]byte(`{"id":"ls\ud800","pk":"p","s":"\udfff"}`), []string{"/pk"})
	if err != nil {
		t.Fatal(err)
	}
	if it.ID != "ls\ufffd" {
		t.Errorf("id %q", it.ID)
	}
	if got := string(it.Marshal(SystemProps{})); !strings.Contains(got, `"s":"\ufffd"`) || !strings.Contains(got, `"id":"ls\ufffd"`) {
		t.Errorf("stored %s: want the lone surrogates as \\ufffd", got)
	}
}
