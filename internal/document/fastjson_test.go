package document

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/valyala/fastjson"
)

// TestAppendJSON: what AppendJSON writes is JSON and reads back as the
// value it was parsed from, control characters, characters Go does not
// print, quotes and backslashes in strings and names included (fastjson's
// MarshalTo wrote \a, \x00 and \U000e0001 for them).
func TestAppendJSON(t *testing.T) {
	for _, in := range []string{
		`{"a":"x\u0007\u0000y\u007f","\u0001k":["\udb40\udc01","q\"\\", "\b\f\n\r\t\u001f"],"n":1.50e3,"t":true,"f":false,"z":null,"o":{},"e":[]}`,
		`"\u00ad\u200b\ufeff\u2028"`,
		`[1,-0,2.5e-7,12345678901234567890]`,
	} {
		v, err := fastjson.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		out := AppendJSON(nil, v)
		if !json.Valid(out) {
			t.Errorf("%s: wrote %s, not JSON", in, out)
			continue
		}
		var want, got any
		_ = json.Unmarshal([]byte(in), &want)
		_ = json.Unmarshal(out, &got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: wrote %s, which reads back as %v, want %v", in, out, got, want)
		}
	}
	if got := string(AppendString(nil, []byte("a\xffb"))); got != `"a\ufffdb"` {
		t.Errorf("invalid UTF-8: %s, want \"a\\ufffdb\"", got)
	}
}
