package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ops builds patch operations from (op, path, value) triples; a value of ""
// means absent. For move, the value is the from pointer.
func ops(spec ...string) []PatchOp {
	var out []PatchOp
	for i := 0; i+2 < len(spec); i += 3 {
		op := PatchOp{Op: spec[i], Path: spec[i+1]}
		if strings.EqualFold(spec[i], "move") {
			op.From = spec[i+2]
		} else if spec[i+2] != "" {
			op.Value = json.RawMessage(spec[i+2])
		}
		out = append(out, op)
	}
	return out
}

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ops  []PatchOp
		want string
	}{
		// Objects.
		{"add new", `{"id":"1","a":1}`, ops("add", "/b", `"x"`), `{"id":"1","a":1,"b":"x"}`},
		{"add replaces in place", `{"id":"1","a":1,"b":2}`, ops("add", "/a", `[1, 2]`), `{"id":"1","a":[1,2],"b":2}`},
		{"add nested", `{"id":"1","o":{"x":1}}`, ops("add", "/o/y", `{"z" : null}`), `{"id":"1","o":{"x":1,"y":{"z":null}}}`},
		{"set new", `{"id":"1"}`, ops("set", "/n", `1.50`), `{"id":"1","n":1.50}`},
		{"set existing", `{"id":"1","a":true,"b":false}`, ops("set", "/a", `null`), `{"id":"1","a":null,"b":false}`},
		{"set nested", `{"id":"1","o":{"p":{"q":1}}}`, ops("set", "/o/p/q", `2`), `{"id":"1","o":{"p":{"q":2}}}`},
		{"replace existing", `{"id":"1","a":1,"b":2}`, ops("replace", "/a", `"one"`), `{"id":"1","a":"one","b":2}`},
		{"remove", `{"id":"1","a":1,"b":2,"c":3}`, ops("remove", "/b", ""), `{"id":"1","a":1,"c":3}`},
		{"remove nested", `{"id":"1","o":{"a":1,"b":2}}`, ops("remove", "/o/a", ""), `{"id":"1","o":{"b":2}}`},
		{"escaped segments", `{"id":"1","a/b":{"c~d":1}}`, ops("set", "/a~1b/c~0d", `2`), `{"id":"1","a/b":{"c~d":2}}`},
		{"escaped key literal matched", `{"id":"1","\u0061":1}`, ops("set", "/a", `2`), `{"id":"1","\u0061":2}`},
		{"new key escaped", `{"id":"1"}`, ops("add", `/q"x\y`, `1`), `{"id":"1","q\"x\\y":1}`},
		{"new key non-ASCII", `{"id":"1"}`, ops("add", "/é", `1`), `{"id":"1","\u00e9":1}`},
		{"op case-insensitive", `{"id":"1"}`, ops("SET", "/a", `1`), `{"id":"1","a":1}`},
		{"numbers and whitespace preserved", "{ \"id\" : \"1\" , \"n\" : 1.0E+2 , \"o\" : { \"s\" : \"\\u00e9 x\" } }",
			ops("set", "/z", `0`), `{"id":"1","n":1.0E+2,"o":{"s":"\u00e9 x"},"z":0}`},
		{"duplicate keys untouched", `{"id":"1","a":1,"b":2,"a":3}`, ops("set", "/c", `4`), `{"id":"1","a":1,"b":2,"a":3,"c":4}`},
		{"duplicate keys set", `{"id":"1","a":1,"b":2,"a":3}`, ops("set", "/a", `4`), `{"id":"1","b":2,"a":4}`},
		{"duplicate keys incr last", `{"id":"1","a":1,"b":2,"a":3}`, ops("incr", "/a", `4`), `{"id":"1","b":2,"a":7}`},
		{"duplicate keys remove all", `{"id":"1","a":1,"b":2,"a":3}`, ops("remove", "/a", ""), `{"id":"1","b":2}`},
		{"duplicate keys escaped", `{"id":"1","a":1,"\u0061":3}`, ops("replace", "/a", `0`), `{"id":"1","\u0061":0}`},

		// Arrays.
		{"add insert", `{"id":"1","t":[1,2,3]}`, ops("add", "/t/1", `9`), `{"id":"1","t":[1,9,2,3]}`},
		{"add insert at 0", `{"id":"1","t":[1]}`, ops("add", "/t/0", `0`), `{"id":"1","t":[0,1]}`},
		{"add at length appends", `{"id":"1","t":[1,2]}`, ops("add", "/t/2", `3`), `{"id":"1","t":[1,2,3]}`},
		{"add dash appends", `{"id":"1","t":[]}`, ops("add", "/t/-", `"x"`), `{"id":"1","t":["x"]}`},
		{"set replaces element", `{"id":"1","t":[1,2,3]}`, ops("set", "/t/1", `9`), `{"id":"1","t":[1,9,3]}`},
		{"set at length appends", `{"id":"1","t":[1]}`, ops("set", "/t/1", `2`), `{"id":"1","t":[1,2]}`},
		{"replace element", `{"id":"1","t":["a","b"]}`, ops("replace", "/t/0", `"z"`), `{"id":"1","t":["z","b"]}`},
		{"remove element", `{"id":"1","t":[1,2,3]}`, ops("remove", "/t/0", ""), `{"id":"1","t":[2,3]}`},
		{"remove last element", `{"id":"1","t":[1,2,3]}`, ops("remove", "/t/2", ""), `{"id":"1","t":[1,2]}`},
		{"incr element", `{"id":"1","t":[1,2.5]}`, ops("incr", "/t/1", `1`), `{"id":"1","t":[1,3.5]}`},
		{"array of objects", `{"id":"1","p":[{"n":"a"},{"n":"b"}]}`, ops("set", "/p/1/n", `"c"`, "add", "/p/0/m", `1`),
			`{"id":"1","p":[{"n":"a","m":1},{"n":"c"}]}`},
		{"nested arrays", `{"id":"1","m":[[1,2],[3]]}`, ops("remove", "/m/0/0", "", "add", "/m/1/-", `4`), `{"id":"1","m":[[2],[3,4]]}`},

		// incr.
		{"incr int", `{"id":"1","c":3}`, ops("incr", "/c", `1`), `{"id":"1","c":4}`},
		{"incr negative", `{"id":"1","c":3}`, ops("incr", "/c", `-5`), `{"id":"1","c":-2}`},
		{"incr creates", `{"id":"1"}`, ops("incr", "/c", `7`), `{"id":"1","c":7}`},
		{"incr creates nested", `{"id":"1","o":{}}`, ops("incr", "/o/c", `-1.5`), `{"id":"1","o":{"c":-1.5}}`},
		{"incr float", `{"id":"1","p":455.95}`, ops("incr", "/p", `10`), `{"id":"1","p":465.95}`},
		{"incr float to integral", `{"id":"1","p":1.5}`, ops("incr", "/p", `0.5`), `{"id":"1","p":2}`},
		{"incr exponent int", `{"id":"1","p":1e2}`, ops("incr", "/p", `1`), `{"id":"1","p":101}`},
		{"incr big int exact", `{"id":"1","c":9007199254740993}`, ops("incr", "/c", `1`), `{"id":"1","c":9007199254740994}`},
		{"incr int64 overflow goes float", `{"id":"1","c":9223372036854775807}`, ops("incr", "/c", `1`), `{"id":"1","c":9223372036854776000}`},
		{"incr float sum", `{"id":"1","c":0.1}`, ops("incr", "/c", `0.2`), `{"id":"1","c":0.30000000000000004}`},

		// move.
		{"move member", `{"id":"1","a":1,"b":2}`, ops("move", "/c", "/a"), `{"id":"1","b":2,"c":1}`},
		{"move onto existing", `{"id":"1","a":1,"b":2}`, ops("move", "/b", "/a"), `{"id":"1","b":1}`},
		{"move into object", `{"id":"1","color":"silver","inv":{"q":15}}`, ops("move", "/inv/color", "/color"),
			`{"id":"1","inv":{"q":15,"color":"silver"}}`},
		{"move array element", `{"id":"1","t":[1,2,3]}`, ops("move", "/t/0", "/t/2"), `{"id":"1","t":[3,1,2]}`},
		{"move out of array", `{"id":"1","t":[1,2]}`, ops("move", "/x", "/t/1"), `{"id":"1","t":[1],"x":2}`},
		{"move to itself", `{"id":"1","a":1,"b":2}`, ops("move", "/a", "/a"), `{"id":"1","a":1,"b":2}`},
		{"move to parent", `{"id":"1","a":{"b":{"c":1}}}`, ops("move", "/a", "/a/b"), `{"id":"1","a":{"c":1}}`},

		// Sequences see earlier operations.
		{"add then patch inside", `{"id":"1"}`, ops("add", "/o", `{"a":[1]}`, "add", "/o/a/-", `2`, "incr", "/o/a/0", `1`),
			`{"id":"1","o":{"a":[2,2]}}`},
		{"remove then add appends", `{"id":"1","a":1,"b":2}`, ops("remove", "/a", "", "add", "/a", `3`), `{"id":"1","b":2,"a":3}`},
		{"system properties kept", `{"id":"1","x":1,"_rid":"r","_self":"s","_etag":"\"e\"","_ts":5,"_attachments":"attachments/"}`,
			ops("remove", "/x", ""), `{"id":"1","_rid":"r","_self":"s","_etag":"\"e\"","_ts":5,"_attachments":"attachments/"}`},
		{"deepest allowed", `{"id":"1"}`, ops("set", "/a", strings.Repeat("[", 128)+strings.Repeat("]", 128)),
			`{"id":"1","a":` + strings.Repeat("[", 128) + strings.Repeat("]", 128) + `}`},
		{"no ops", "{\n\"id\": \"1\"}", nil, `{"id":"1"}`},
	}
	for _, tt := range tests {
		got, err := ApplyPatch([]byte(tt.doc), tt.ops)
		if err != nil {
			t.Errorf("%s: ApplyPatch(%s, %+v) = error %v, want %s", tt.name, tt.doc, tt.ops, err, tt.want)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s: ApplyPatch(%s, %+v) = %s, want %s", tt.name, tt.doc, tt.ops, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: ApplyPatch(%s) = %s, not valid JSON", tt.name, tt.doc, got)
		}
	}
}

func TestApplyPatchErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ops  []PatchOp
		want string // substring of the error message
	}{
		{"replace missing", `{"id":"1"}`, ops("replace", "/a", `1`), `/a does not exist`},
		{"remove missing", `{"id":"1"}`, ops("remove", "/a", ""), `/a does not exist`},
		{"remove missing nested", `{"id":"1","o":{}}`, ops("remove", "/o/a", ""), `/o/a does not exist`},
		{"add parent missing", `{"id":"1"}`, ops("add", "/a/b", `1`), `/a does not exist`},
		{"set parent missing deep", `{"id":"1","a":{}}`, ops("set", "/a/b/c", `1`), `/a/b does not exist`},
		{"add parent scalar", `{"id":"1","a":5}`, ops("add", "/a/b", `1`), `parent /a is not an object or array`},
		{"walk through scalar", `{"id":"1","a":"s"}`, ops("set", "/a/b/c", `1`), `/a is not an object or array`},
		{"add index beyond length", `{"id":"1","t":[1]}`, ops("add", "/t/2", `1`), `array index 2 is out of range`},
		{"set index beyond length", `{"id":"1","t":[1]}`, ops("set", "/t/5", `1`), `out of range`},
		{"replace index at length", `{"id":"1","t":[1]}`, ops("replace", "/t/1", `1`), `out of range`},
		{"remove index at length", `{"id":"1","t":[]}`, ops("remove", "/t/0", ""), `out of range`},
		{"remove dash", `{"id":"1","t":[1]}`, ops("remove", "/t/-", ""), `not a valid array index`},
		{"array index not a number", `{"id":"1","t":[1]}`, ops("add", "/t/x", `1`), `"x" is not a valid array index`},
		{"array index leading zero", `{"id":"1","t":[1,2]}`, ops("set", "/t/01", `1`), `not a valid array index`},
		{"array index negative", `{"id":"1","t":[1,2]}`, ops("set", "/t/-1", `1`), `not a valid array index`},
		{"array index huge", `{"id":"1","t":[1]}`, ops("add", "/t/99999999999999999999", `1`), `not a valid array index`},
		{"incr string target", `{"id":"1","a":"x"}`, ops("incr", "/a", `1`), `current value is not a number`},
		{"incr object target", `{"id":"1","a":{}}`, ops("incr", "/a", `1`), `current value is not a number`},
		{"incr string value", `{"id":"1","a":1}`, ops("incr", "/a", `"1"`), `value must be a number`},
		{"incr string value creating", `{"id":"1"}`, ops("incr", "/a", `true`), `value must be a number`},
		{"incr missing element", `{"id":"1","t":[]}`, ops("incr", "/t/0", `1`), `out of range`},
		{"incr overflow", `{"id":"1","a":1.7e308}`, ops("incr", "/a", `1.7e308`), `out of the range of a double`},
		{"incr value too big", `{"id":"1","a":1}`, ops("incr", "/a", `1e400`), `out of the range of a double`},
		{"move from missing", `{"id":"1"}`, ops("move", "/b", "/a"), `/a does not exist`},
		{"move into own child", `{"id":"1","a":{"b":{}}}`, ops("move", "/a/b/c", "/a"), `cannot move a value into one of its own children`},
		{"move to missing parent", `{"id":"1","a":1}`, ops("move", "/x/y", "/a"), `/x does not exist`},
		{"move from id", `{"id":"1"}`, ops("move", "/x", "/id"), `cannot patch id`},
		{"patch id", `{"id":"1"}`, ops("set", "/id", `"2"`), `cannot patch id`},
		{"remove id", `{"id":"1"}`, ops("remove", "/id", ""), `cannot patch id`},
		{"patch _rid", `{"id":"1"}`, ops("set", "/_rid", `"x"`), `cannot patch system property _rid`},
		{"patch _ts", `{"id":"1"}`, ops("incr", "/_ts", `1`), `cannot patch system property _ts`},
		{"patch inside _attachments", `{"id":"1"}`, ops("add", "/_attachments/x", `1`), `cannot patch system property _attachments`},
		{"patch _etag", `{"id":"1"}`, ops("remove", "/_etag", ""), `_etag`},
		{"patch _self", `{"id":"1"}`, ops("replace", "/_self", `1`), `_self`},
		{"bad value JSON", `{"id":"1"}`, ops("set", "/a", `{"a":}`), `value is not valid JSON`},
		{"value trailing garbage", `{"id":"1"}`, ops("set", "/a", `1 2`), `value is not valid JSON`},
		{"value missing", `{"id":"1"}`, ops("add", "/a", ""), `value is required`},
		{"unknown op", `{"id":"1"}`, ops("copy", "/a", `1`), `unknown op "copy"`},
		{"empty op", `{"id":"1"}`, ops("", "/a", `1`), `op is required`},
		{"path without slash", `{"id":"1"}`, ops("set", "a", `1`), `must start with '/'`},
		{"empty path", `{"id":"1"}`, ops("remove", "", ""), `path is required`},
		{"root path", `{"id":"1"}`, ops("set", "/", `1`), `empty segment`},
		{"empty segment", `{"id":"1","a":{}}`, ops("set", "/a//b", `1`), `empty segment`},
		{"bad tilde", `{"id":"1"}`, ops("set", "/a~2", `1`), `'~' not followed by 0 or 1`},
		{"trailing tilde", `{"id":"1"}`, ops("set", "/a~", `1`), `'~' not followed by 0 or 1`},
		{"invalid UTF-8 path", `{"id":"1"}`, ops("set", "/a\xff", `1`), `not valid UTF-8`},
		{"doc not object", `[1]`, ops("set", "/a", `1`), `must be a JSON object`},
		{"doc not JSON", `{"id":`, ops("set", "/a", `1`), `not valid JSON`},
		{"too deep", `{"id":"1","o":{}}`, ops("set", "/o/a", strings.Repeat("[", 128)+strings.Repeat("]", 128)), `nesting deeper than 128`},
		{"move too deep", `{"id":"1","o":{},"a":` + strings.Repeat("[", 128) + strings.Repeat("]", 128) + `}`,
			ops("move", "/o/a", "/a"), `nested deeper than 128`},
		{"second op fails", `{"id":"1"}`, ops("set", "/a", `1`, "replace", "/b", `2`), `patch operation 1 (replace "/b")`},
	}
	for _, tt := range tests {
		got, err := ApplyPatch([]byte(tt.doc), tt.ops)
		ie, ok := errors.AsType[*InvalidError](err)
		if !ok {
			t.Errorf("%s: ApplyPatch(%s, %+v) = %s, %v, want *InvalidError containing %q", tt.name, tt.doc, tt.ops, got, err, tt.want)
			continue
		}
		if !strings.Contains(ie.Msg, tt.want) {
			t.Errorf("%s: ApplyPatch(%s, %+v) error = %q, want it to contain %q", tt.name, tt.doc, tt.ops, ie.Msg, tt.want)
		}
	}
}

func TestApplyPatchErrorNamesOp(t *testing.T) {
	_, err := ApplyPatch([]byte(`{"id":"1","a":1}`), ops("set", "/b", `1`, "remove", "/zz", ""))
	want := `document: patch operation 1 (remove "/zz"): /zz does not exist`
	if err == nil || err.Error() != want {
		t.Errorf("ApplyPatch error = %v, want %s", err, want)
	}
}

func TestApplyPatchDoesNotModifyInput(t *testing.T) {
	doc := []byte(`{"id":"1","a":{"b":[1,2]},"c":3}`)
	orig := string(doc)
	if _, err := ApplyPatch(doc, ops("remove", "/a/b/0", "", "incr", "/c", `1`, "move", "/d", "/a")); err != nil {
		t.Fatalf("ApplyPatch: %v", err)
	}
	if _, err := ApplyPatch(doc, ops("remove", "/a/b/0", "", "remove", "/nope", "")); err == nil {
		t.Fatalf("ApplyPatch with a failing op = nil error, want error")
	}
	if string(doc) != orig {
		t.Errorf("doc after ApplyPatch = %s, want %s", doc, orig)
	}
}

// TestApplyPatchGoSDK is the scenario of the Go SDK's patch test.
func TestApplyPatchGoSDK(t *testing.T) {
	doc := `{"id":"1","value":"4","description":"d","count":3,"pk":"1"}`
	body := `{"operations":[{"op":"replace","path":"/value","value":"5"},{"op":"set","path":"/hello","value":"world"},` +
		`{"op":"add","path":"/foo","value":"bar"},{"op":"remove","path":"/description"},{"op":"incr","path":"/count","value":1}]}`
	req, err := ParsePatchRequest([]byte(body))
	if err != nil {
		t.Fatalf("ParsePatchRequest: %v", err)
	}
	got, err := ApplyPatch([]byte(doc), req.Operations)
	if err != nil {
		t.Fatalf("ApplyPatch: %v", err)
	}
	want := `{"id":"1","value":"5","count":4,"pk":"1","hello":"world","foo":"bar"}`
	if string(got) != want {
		t.Errorf("ApplyPatch(%s) = %s, want %s", doc, got, want)
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	wantM := map[string]any{"id": "1", "value": "5", "hello": "world", "foo": "bar", "count": 4.0, "pk": "1"}
	if diff := cmp.Diff(wantM, m); diff != "" {
		t.Errorf("ApplyPatch(%s) mismatch (-want +got):\n%s", doc, diff)
	}
}

// TestApplyPatchDocsExample is the example of the Cosmos DB documentation.
func TestApplyPatchDocsExample(t *testing.T) {
	doc := `{"id":"e","name":"R-410 Road Bicycle","price":455.95,"inventory":{"quantity":15},"used":false,"categoryId":"road-bikes","tags":["r-series"]}`
	body := `[{ "op": "add", "path": "/color", "value": "silver" },
		{ "op": "remove", "path": "/used" },
		{ "op": "set", "path": "/price", "value": 355.45 },
		{ "op": "incr", "path": "/inventory/quantity", "value": 10 },
		{ "op": "add", "path": "/tags/-", "value": "featured-bikes" },
		{ "op": "move", "from": "/color", "path": "/inventory/color" }]`
	req, err := ParsePatchRequest([]byte(body))
	if err != nil {
		t.Fatalf("ParsePatchRequest: %v", err)
	}
	got, err := ApplyPatch([]byte(doc), req.Operations)
	if err != nil {
		t.Fatalf("ApplyPatch: %v", err)
	}
	want := `{"id":"e","name":"R-410 Road Bicycle","price":355.45,"inventory":{"quantity":25,"color":"silver"},"categoryId":"road-bikes","tags":["r-series","featured-bikes"]}`
	if string(got) != want {
		t.Errorf("ApplyPatch(%s) = %s, want %s", doc, got, want)
	}
}

func TestParsePatchRequest(t *testing.T) {
	tests := []struct {
		body string
		want PatchRequest
	}{
		{`{"operations":[{"op":"set","path":"/a","value":1}]}`,
			PatchRequest{Operations: []PatchOp{{Op: "set", Path: "/a", Value: json.RawMessage(`1`)}}}},
		{`{"condition":"from c where c.n > 0","operations":[{"op":"remove","path":"/a"}]}`,
			PatchRequest{Condition: "from c where c.n > 0", Operations: []PatchOp{{Op: "remove", Path: "/a"}}}},
		{` [{"op":"Add","path":"/t/-","value":{"x": [1]}},{"op":"MOVE","path":"/b","from":"/a"}]`,
			PatchRequest{Operations: []PatchOp{{Op: "add", Path: "/t/-", Value: json.RawMessage(`{"x": [1]}`)}, {Op: "move", Path: "/b", From: "/a"}}}},
		{`{"condition":null,"operations":[{"op":"set","path":"/a","value":null}]}`,
			PatchRequest{Operations: []PatchOp{{Op: "set", Path: "/a", Value: json.RawMessage(`null`)}}}},
		{`{"operations":[{"op":"incr","path":"/n","value":-2.5}],"extra":true}`,
			PatchRequest{Operations: []PatchOp{{Op: "incr", Path: "/n", Value: json.RawMessage(`-2.5`)}}}},
		{`{"operations":[` + strings.Repeat(`{"op":"remove","path":"/a"},`, 9) + `{"op":"remove","path":"/a"}]}`,
			PatchRequest{Operations: []PatchOp{{Op: "remove", Path: "/a"}, {Op: "remove", Path: "/a"}, {Op: "remove", Path: "/a"},
				{Op: "remove", Path: "/a"}, {Op: "remove", Path: "/a"}, {Op: "remove", Path: "/a"}, {Op: "remove", Path: "/a"},
				{Op: "remove", Path: "/a"}, {Op: "remove", Path: "/a"}, {Op: "remove", Path: "/a"}}}},
	}
	for _, tt := range tests {
		got, err := ParsePatchRequest([]byte(tt.body))
		if err != nil {
			t.Errorf("ParsePatchRequest(%s) = error %v, want %+v", tt.body, err, tt.want)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParsePatchRequest(%s) mismatch (-want +got):\n%s", tt.body, diff)
		}
	}
}

func TestParsePatchRequestErrors(t *testing.T) {
	eleven := `[` + strings.Repeat(`{"op":"remove","path":"/a"},`, 10) + `{"op":"remove","path":"/a"}]`
	tests := []struct {
		body string
		want string
	}{
		{``, `not valid`},
		{`{`, `not valid`},
		{`{"operations":[{"op":"set","path":"/a","value":1}]} x`, `not valid`},
		{`"ops"`, `must be an object or an array`},
		// Invalid UTF-8 anywhere: a path's bytes decoded to U+FFFD and were set (a patch hunt).
		{"[{\"op\":\"set\",\"path\":\"/k\xff\",\"value\":1}]", `invalid UTF-8`},
		{"{\"condition\":\"from c where c.k = 'v\xff'\",\"operations\":[{\"op\":\"remove\",\"path\":\"/a\"}]}", `invalid UTF-8`},
		{"[{\"op\":\"move\",\"from\":\"/a\xc3\",\"path\":\"/b\"}]", `invalid UTF-8`},
		{`{"operations":{"op":"set"}}`, `wrong type`},
		{`{"operations":[{"op":1,"path":"/a"}]}`, `wrong type`},
		{`{"condition":5,"operations":[{"op":"remove","path":"/a"}]}`, `wrong type`},
		{`{}`, `at least one operation`},
		{`null`, `at least one operation`},
		{`[]`, `at least one operation`},
		{`{"operations":[]}`, `at least one operation`},
		{eleven, `a patch request may contain at most 10 operations`},
		{`[{"op":"copy","path":"/a","from":"/b"}]`, `unknown op "copy"`},
		{`[{"path":"/a","value":1}]`, `op is required`},
		{`[{"op":"set","value":1}]`, `path is required`},
		{`[{"op":"set","path":"a","value":1}]`, `must start with '/'`},
		{`[{"op":"incr","path":"/a"}]`, `value is required`},
		{`[{"op":"move","path":"/a"}]`, `from is required`},
		{`[{"op":"move","path":"/a","from":"x"}]`, `from must start with '/'`},
		{`[{"op":"remove","path":"/a"},{"op":"set","path":"/id","value":"x"}]`, `patch operation 1 (set "/id"): cannot patch id`},
		// A member named twice: encoding/json kept the last (a bug hunt).
		{`[{"op":"set","path":"/a","path":"/b","value":1}]`, `duplicate property name "path"`},
		{`{"operations":[{"op":"remove","path":"/a"}],"operations":[{"op":"remove","path":"/b"}]}`, `duplicate property name "operations"`},
	}
	for _, tt := range tests {
		got, err := ParsePatchRequest([]byte(tt.body))
		ie, ok := errors.AsType[*InvalidError](err)
		if !ok {
			t.Errorf("ParsePatchRequest(%s) = %+v, %v, want *InvalidError containing %q", tt.body, got, err, tt.want)
			continue
		}
		if !strings.Contains(ie.Msg, tt.want) {
			t.Errorf("ParsePatchRequest(%s) error = %q, want it to contain %q", tt.body, ie.Msg, tt.want)
		}
	}
}

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"/a", []string{"a"}},
		{"/a/b/0", []string{"a", "b", "0"}},
		{"/a~1b", []string{"a/b"}},
		{"/~0~1", []string{"~/"}},
		{"/~01", []string{"~1"}},
		{"/é/-", []string{"é", "-"}},
	}
	for _, tt := range tests {
		got, err := parsePointer(tt.in)
		if err != nil {
			t.Errorf("parsePointer(%q) = error %v, want %q", tt.in, err, tt.want)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parsePointer(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
		if back := pointerText(got); back != tt.in {
			t.Errorf("pointerText(%q) = %q, want %q", got, back, tt.in)
		}
	}
}

func FuzzPatch(f *testing.F) {
	f.Add([]byte(`{"id":"1","value":"4","description":"d","count":3,"pk":"1"}`),
		[]byte(`[{"op":"replace","path":"/value","value":"5"},{"op":"set","path":"/hello","value":"world"},{"op":"add","path":"/foo","value":"bar"},{"op":"remove","path":"/description"},{"op":"incr","path":"/count","value":1}]`))
	f.Add([]byte(`{"id":"1","t":[1,[2,{"a":3}]],"o":{"x~y":{"a/b":1}}}`),
		[]byte(`{"operations":[{"op":"move","from":"/t/1/1","path":"/o/x~0y/n"},{"op":"add","path":"/t/0","value":[]},{"op":"incr","path":"/t/1","value":2.5}]}`))
	f.Add([]byte(`{"id":"1","n":9223372036854775807,"f":1e308}`),
		[]byte(`[{"op":"incr","path":"/n","value":1},{"op":"incr","path":"/f","value":1e308}]`))
	f.Add([]byte(`{ "id" : "1" , "a" : { } , "a" : [ ] }`), []byte(`[{"op":"set","path":"/a/-","value":null}]`))
	f.Fuzz(func(t *testing.T, doc, body []byte) {
		req, err := ParsePatchRequest(body)
		if err != nil {
			if _, ok := errors.AsType[*InvalidError](err); !ok {
				t.Fatalf("ParsePatchRequest(%q) = %v, want *InvalidError", body, err)
			}
			return
		}
		out, err := ApplyPatch(doc, req.Operations)
		if err != nil {
			if _, ok := errors.AsType[*InvalidError](err); !ok {
				t.Fatalf("ApplyPatch(%q, %q) = %v, want *InvalidError", doc, body, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("ApplyPatch(%q, %q) = %q, not valid JSON", doc, body, out)
		}
		if len(out) == 0 || out[0] != '{' {
			t.Fatalf("ApplyPatch(%q, %q) = %q, not an object", doc, body, out)
		}
		if _, err := ExtractPK(out, []string{"/pk"}); err != nil {
			t.Fatalf("ExtractPK(ApplyPatch(%q, %q)) = %v, want the result readable", doc, body, err)
		}
	})
}

func BenchmarkApplyPatch(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"id":"item-1","pk":"tenant-1","count":3,"description":"d","tags":["a","b","c"],"nested":{"x":1,"y":[1,2,3]}`)
	for i := 0; sb.Len() < 1000; i++ {
		fmt.Fprintf(&sb, `,"field%d":"value number %d with some text"`, i, i)
	}
	sb.WriteString(`,"_rid":"2Ro5AKZvbAABAAAAAAAAAA==","_self":"dbs/2Ro5AA==/colls/2Ro5AKZvbAA=/docs/2Ro5AKZvbAABAAAAAAAAAA==/","_etag":"\"00000000-0000-0000-0000-000000000001\"","_ts":1700000000,"_attachments":"attachments/"}`)
	doc := []byte(sb.String())
	o := ops("replace", "/description", `"new"`, "set", "/hello", `"world"`, "add", "/tags/-", `"d"`,
		"remove", "/nested/x", "", "incr", "/count", `1`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ApplyPatch(doc, o); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParsePatchRequestAbsentValueIsNull: the Go SDK omits "value" for a nil
// value; add, set and replace then write JSON null.
func TestParsePatchRequestAbsentValueIsNull(t *testing.T) {
	for _, op := range []string{"add", "set", "replace"} {
		body := `[{"op":"` + op + `","path":"/a"}]`
		req, err := ParsePatchRequest([]byte(body))
		if err != nil || string(req.Operations[0].Value) != "null" {
			t.Errorf("ParsePatchRequest(%s) = %+v, %v, want value null", body, req, err)
		}
	}
	if _, err := ParsePatchRequest([]byte(`[{"op":"incr","path":"/a"}]`)); err == nil {
		t.Errorf("incr without a value was accepted")
	}
}

// TestPatchEnvelopeNamesExact: a patch request's members are read by their
// exact names, as the wire spells them: encoding/json matched "Condition"
// for "condition", and a request with both ran under the second (a bug
// hunt: a false condition beside a true one patched). Names other than the
// wire's are ignored.
func TestPatchEnvelopeNamesExact(t *testing.T) {
	for _, tc := range []struct {
		body, cond, path string
	}{
		{`{"condition":"from c where false","Condition":"from c where true","operations":[{"op":"set","path":"/a","value":1}]}`, "from c where false", "/a"},
		{`{"Condition":"from c where true","operations":[{"op":"set","path":"/a","Path":"/b","value":1}]}`, "", "/a"},
	} {
		req, err := ParsePatchRequest([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if req.Condition != tc.cond || len(req.Operations) != 1 || req.Operations[0].Path != tc.path {
			t.Errorf("%s: condition %q, operations %+v; want %q and one at %s", tc.body, req.Condition, req.Operations, tc.cond, tc.path)
		}
	}
	if _, err := ParsePatchRequest([]byte(`{"operations":[{"op":"set","path":"/a","value":{"x":1,"x":2}}]}`)); err == nil || !strings.Contains(err.Error(), `duplicate property name "x"`) {
		t.Errorf("a value naming a member twice: %v, want the duplicate named", err)
	}
}
