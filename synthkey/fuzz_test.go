package synthkey

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// sentinels are the errors a property can produce, for comparing two
// failures by kind.
var sentinels = []error{ErrMissing, ErrNull, ErrNotScalar, ErrNumberRange, ErrUnsupportedType, ErrInvalidPath, ErrNotObject}

func kind(err error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// FuzzCanonicalJSON checks path parsing and value canonicalisation on
// arbitrary JSON documents and paths: no panics; the key does not depend on
// whether numbers were decoded as float64 or json.Number; canonical numbers
// read back as the same double and have no exponent; Apply, ApplyJSON and
// PointKey agree, and ApplyJSON's output keeps the key.
func FuzzCanonicalJSON(f *testing.F) {
	f.Add([]byte(`{"a":"x","b":{"c":1.5}}`), "/b/c")
	f.Add([]byte(`{"a":17.0}`), "/a")
	f.Add([]byte(`{"a":-0.0}`), "/a")
	f.Add([]byte(`{"a":1e-7,"b":true}`), "/a")
	f.Add([]byte(`{"a":9007199254740993}`), "/a")
	f.Add([]byte(`{"a":null}`), "/a")
	f.Add([]byte(`{"a":[1]}`), "/a/0")
	f.Add([]byte(`{"a/b":"x"}`), "/a/b")
	f.Add([]byte(`[]`), "/a")
	f.Fuzz(func(t *testing.T, doc []byte, p string) {
		const target = "/\x00pk"
		k, err := New(Config{Target: target, Paths: []string{p}, Suffix: SuffixHash, Buckets: 7, HashPaths: []string{p}})
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("New(path %q) = %v, want only ErrInvalidPath", p, err)
			}
			return
		}
		m1, err := decodeObject(doc)
		if err != nil {
			return
		}
		var m2 map[string]any
		if err := json.Unmarshal(doc, &m2); err != nil {
			return // e.g. a number beyond float64, which json.Number keeps
		}
		b1, err1 := k.Base(m1)
		b2, err2 := k.Base(m2)
		if b1 != b2 || kind(err1) != kind(err2) {
			t.Fatalf("Base(%s) at %q = %q, %v with json.Number and %q, %v with float64", doc, p, b1, err1, b2, err2)
		}
		if err1 != nil {
			if pe, ok := errors.AsType[*PathError](err1); !ok || pe.Path != p {
				t.Fatalf("Base(%s) at %q = %v, want a *PathError naming the path", doc, p, err1)
			}
			return
		}
		if v, _ := path.lookup(k.paths[0], m2); v != nil {
			if f, ok := v.(float64); ok {
				back, err := strconv.ParseFloat(b1, 64)
				if err != nil || back != f || strings.ContainsAny(b1, "eE+") {
					t.Fatalf("Canonical(%v) = %q, which reads back as %v, %v", f, b1, back, err)
				}
			}
		}
		bucket, err := k.Bucket(m1)
		if err != nil || bucket < 1 || bucket > 7 || bucket != HashBucket(7, b1) {
			t.Fatalf("Bucket at %q = %d, %v, want HashBucket(7, %q) = %d", p, bucket, err, b1, HashBucket(7, b1))
		}
		want := b1 + "." + strconv.Itoa(bucket)
		if got, err := k.PointKey(m1); got != want || err != nil {
			t.Fatalf("PointKey = %q, %v, want %q", got, err, want)
		}
		out, key, err := k.ApplyJSON(doc)
		if key != want || err != nil {
			t.Fatalf("ApplyJSON(%s) = %q, %v, want %q", doc, key, err, want)
		}
		m3, err := decodeObject(out)
		if err != nil {
			t.Fatalf("ApplyJSON(%s) wrote %s: %v", doc, out, err)
		}
		if got, _ := m3["\x00pk"].(string); got != want {
			t.Fatalf("ApplyJSON(%s) wrote key %q, want %q", doc, got, want)
		}
		if got, err := k.PointKey(m3); got != want || err != nil {
			t.Fatalf("PointKey of ApplyJSON's output = %q, %v, want %q", got, err, want)
		}
	})
}
