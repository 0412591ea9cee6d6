package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeQuerySpec checks that decodeQuerySpec decodes a body as
// json.Unmarshal does: the same query and parameters, and an error for the
// same bodies.
func FuzzDecodeQuerySpec(f *testing.F) {
	for _, s := range []string{
		`{"query":"SELECT * FROM c WHERE c.pk = @pk","parameters":[{"name":"@pk","value":"key0000123"}]}`,
		`{"query":"SELECT * FROM c WHERE c.half = @h","parameters":[{"name":"@h","value":1}]}`,
		` { "parameters" : [ { "value" : -1.5e+3 , "name" : "@a" } , {"name":"@b","value":true},{"name":"@c","value":null} ] , "query" : "q" } `,
		`{"query":"SELECT * FROM c"}`, `{"query":""}`, `{"query":"x","parameters":[]}`, `{"query":"x","parameters":null}`,
		`{"Query":"x"}`, `{"query":"x","query":"y"}`, `{"query":"a\"b"}`, `{"query":"\u00e9"}`, `{"query":"é"}`, "{\"query\":\"\xff\"}",
		`{"query":"x","parameters":[{"name":"@o","value":{"a":[1,2]}}]}`, `{"query":"x","parameters":[{"name":"@p"}]}`,
		`{"query":"x","parameters":[{"value":1}]}`, `{"query":"x","parameters":[{"name":"@p","value":1,"name":"@q"}]}`,
		`{"query":"x","parameters":[{"name":"@p","value":01}]}`, `{"query":"x","parameters":[{"name":"@p","value":1.}]}`,
		`{"query":"x","parameters":[{"name":"@p","value":tru}]}`, `{"query":"x","other":1}`, `{"query":"x"} x`, `[]`, `null`, ``, `{`,
		`{"query":1}`, `{"query":null}`, `{"query":"x",}`, `{"query":"x","parameters":[{"name":"@p","value":1},]}`,
		`{"query":"SELECT * FROM c WHERE c.n \u003e= 5 \u0026\u0026 \"\\\/\b\f\n\r\t\u00e9\u2028"}`,
		`{"query":"\ud83d\ude00 \ud800 \udc00"}`, `{"query":"\u12"}`, `{"query":"\x"}`, `{"query":"x","parameters":[{"name":"@\u0070","value":"\ud800\n"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want querySpec
		wantErr := json.Unmarshal(body, &want)
		got, err := decodeQuerySpec(body)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeQuerySpec(%q) error %v, json.Unmarshal's %v", body, err, wantErr)
		}
		if err != nil {
			if err.Error() != wantErr.Error() {
				t.Fatalf("decodeQuerySpec(%q) error %q, json.Unmarshal's %q", body, err, wantErr)
			}
			return
		}
		if !reflect.DeepEqual(normal(got), normal(want)) {
			t.Fatalf("decodeQuerySpec(%q) = %+v, json.Unmarshal gives %+v", body, got, want)
		}
	})
}

// normal makes specs comparable: parameter values as strings (nil stays
// distinct from empty), and no parameters as nil.
func normal(s querySpec) any {
	type param struct {
		Name  string
		Value *string
	}
	out := struct {
		Query  *string
		Params []param
	}{Query: s.Query}
	for _, p := range s.Parameters {
		var v *string
		if p.Value != nil {
			str := string(p.Value)
			v = &str
		}
		out.Params = append(out.Params, param{p.Name, v})
	}
	return out
}

// TestQuickScanSpec checks that the bodies SDKs send take the scanner's
// path (decodeQuerySpec would be right without it, only slower).
func TestQuickScanSpec(t *testing.T) {
	for _, body := range []string{
		// The Go SDK (azcosmos v1.5.0): encoding/json, HTML characters escaped.
		`{"query":"SELECT * FROM c WHERE c.pk = @pk","parameters":[{"name":"@pk","value":"key0000123"}]}`,
		`{"query":"SELECT * FROM c WHERE c.n \u003e= @lo","parameters":[{"name":"@lo","value":500}]}`,
		`{"query":"SELECT * FROM c"}`,
		// The JavaScript SDK: JSON.stringify.
		`{"query":"SELECT * FROM c WHERE c.n >= @lo AND c.ok = @ok","parameters":[{"name":"@lo","value":1.5},{"name":"@ok","value":true}]}`,
	} {
		if _, ok := quickScanSpec([]byte(body)); !ok {
			t.Errorf("quickScanSpec(%s) refused it", body)
		}
	}
}
