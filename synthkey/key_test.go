package synthkey

import (
	"bufio"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/go-cmp/cmp"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in   any
		want string
		err  error
	}{
		{"2018-08-09", "2018-08-09", nil},
		{"", "", nil},
		{"Zürich", "Zürich", nil},
		{true, "true", nil},
		{false, "false", nil},
		{17.0, "17", nil},
		{float64(-3), "-3", nil},
		{math.Copysign(0, -1), "0", nil},
		{0.5, "0.5", nil},
		{0.1, "0.1", nil},
		{1e-7, "0.0000001", nil},
		{-2.25, "-2.25", nil},
		{float32(0.1), "0.1", nil},
		{float32(16777216), "16777216", nil},
		{1e15, "1000000000000000", nil},
		{float64(maxSafeInteger), "9007199254740991", nil},
		{float64(1 << 53), "", ErrNumberRange},
		{-float64(1 << 53), "", ErrNumberRange},
		{1e300, "", ErrNumberRange},
		{math.Inf(1), "", ErrNumberRange},
		{math.NaN(), "", ErrNumberRange},
		{17, "17", nil},
		{int8(-8), "-8", nil},
		{int16(300), "300", nil},
		{int32(-70000), "-70000", nil},
		{int64(maxSafeInteger), "9007199254740991", nil},
		{int64(-maxSafeInteger), "-9007199254740991", nil},
		{int64(maxSafeInteger + 1), "", ErrNumberRange},
		{int64(math.MinInt64), "", ErrNumberRange},
		{uint(7), "7", nil},
		{uint8(255), "255", nil},
		{uint16(65535), "65535", nil},
		{uint32(1 << 31), "2147483648", nil},
		{uint64(maxSafeInteger), "9007199254740991", nil},
		{uint64(math.MaxUint64), "", ErrNumberRange},
		{json.Number("17"), "17", nil},
		{json.Number("17.0"), "17", nil},
		{json.Number("1.7e1"), "17", nil},
		{json.Number("1.7E+1"), "17", nil},
		{json.Number("-0"), "0", nil},
		{json.Number("-0.0e5"), "0", nil},
		{json.Number("0.5"), "0.5", nil},
		{json.Number("1e-7"), "0.0000001", nil},
		{json.Number("9007199254740991"), "9007199254740991", nil},
		{json.Number("9007199254740992"), "", ErrNumberRange},
		{json.Number("9007199254740993"), "", ErrNumberRange},
		{json.Number("1e400"), "", ErrNumberRange},
		{json.Number("1e-400"), "0", nil}, // underflows to 0, as in every JSON client
		{json.Number(""), "", ErrUnsupportedType},
		{json.Number("0x10"), "", ErrUnsupportedType},
		{json.Number("Inf"), "", ErrUnsupportedType},
		{json.Number("+1"), "", ErrUnsupportedType},
		{json.Number("01"), "", ErrUnsupportedType},
		{json.Number("1."), "", ErrUnsupportedType},
		{json.Number(".5"), "", ErrUnsupportedType},
		{json.Number("1e"), "", ErrUnsupportedType},
		{json.Number("1_000"), "", ErrUnsupportedType},
		{nil, "", ErrNull},
		{map[string]any{"a": 1}, "", ErrNotScalar},
		{[]any{1}, "", ErrNotScalar},
		{[]string{"a"}, "", ErrUnsupportedType},
		{struct{}{}, "", ErrUnsupportedType},
	}
	for _, tt := range tests {
		got, err := Canonical(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("Canonical(%#v) = %q, %v, want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		segs []string
	}{
		{"/a", []string{"a"}},
		{"/a/b/c", []string{"a", "b", "c"}},
		{"/with space/ü", []string{"with space", "ü"}},
		{"", nil},
		{"/", nil},
		{"a", nil},
		{"a/b", nil},
		{"//a", nil},
		{"/a/", nil},
		{"/a//b", nil},
	}
	for _, tt := range tests {
		p, err := parsePath(tt.in)
		if tt.segs == nil {
			if pe, ok := errors.AsType[*PathError](err); !ok || pe.Path != tt.in || !errors.Is(err, ErrInvalidPath) {
				t.Errorf("parsePath(%q) = %v, %v, want a *PathError wrapping ErrInvalidPath", tt.in, p.segs, err)
			}
			continue
		}
		if err != nil || !cmp.Equal(p.segs, tt.segs) {
			t.Errorf("parsePath(%q) = %q, %v, want %q", tt.in, p.segs, err, tt.segs)
		}
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		err  error
	}{
		{"no target", Config{Paths: []string{"/a"}}, ErrInvalidPath},
		{"bad path", Config{Target: "/pk", Paths: []string{"a"}}, ErrInvalidPath},
		{"no paths", Config{Target: "/pk"}, ErrInvalidConfig},
		{"target is a path", Config{Target: "/pk", Paths: []string{"/pk"}}, ErrInvalidPath},
		{"target inside a path", Config{Target: "/a/pk", Paths: []string{"/a"}}, ErrInvalidPath},
		{"path inside the target", Config{Target: "/a", Paths: []string{"/a/b"}}, ErrInvalidPath},
		{"target is a hash path", Config{Target: "/pk", Paths: []string{"/a"}, Suffix: SuffixHash, Buckets: 4, HashPaths: []string{"/pk"}}, ErrInvalidPath},
		{"bad hash path", Config{Target: "/pk", Paths: []string{"/a"}, Suffix: SuffixHash, Buckets: 4, HashPaths: []string{""}}, ErrInvalidPath},
		{"buckets without suffix", Config{Target: "/pk", Paths: []string{"/a"}, Buckets: 4}, ErrInvalidConfig},
		{"hash paths without suffix", Config{Target: "/pk", Paths: []string{"/a"}, HashPaths: []string{"/b"}}, ErrInvalidConfig},
		{"random without buckets", Config{Target: "/pk", Paths: []string{"/a"}, Suffix: SuffixRandom}, ErrInvalidConfig},
		{"too many buckets", Config{Target: "/pk", Paths: []string{"/a"}, Suffix: SuffixRandom, Buckets: MaxBuckets + 1}, ErrInvalidConfig},
		{"negative buckets", Config{Target: "/pk", Paths: []string{"/a"}, Suffix: SuffixHash, Buckets: -1, HashPaths: []string{"/b"}}, ErrInvalidConfig},
		{"hash without hash paths", Config{Target: "/pk", Paths: []string{"/a"}, Suffix: SuffixHash, Buckets: 4}, ErrInvalidConfig},
		{"random with hash paths", Config{Target: "/pk", Paths: []string{"/a"}, Suffix: SuffixRandom, Buckets: 4, HashPaths: []string{"/b"}}, ErrInvalidConfig},
		{"unknown suffix", Config{Target: "/pk", Paths: []string{"/a"}, Suffix: 7, Buckets: 4}, ErrInvalidConfig},
	}
	for _, tt := range tests {
		k, err := New(tt.cfg)
		if !errors.Is(err, tt.err) || k != nil {
			t.Errorf("%s: New(%+v) = %v, %v, want %v", tt.name, tt.cfg, k, err, tt.err)
		}
	}
	// The limits themselves are valid.
	for _, n := range []int{1, MaxBuckets} {
		if _, err := RandomSuffix("/pk", n, "/a"); err != nil {
			t.Errorf("RandomSuffix(/pk, %d, /a) = %v, want no error", n, err)
		}
	}
}

// TestKeyErrors checks that a property problem names its path and wraps the
// right sentinel, from every method that reads properties.
func TestKeyErrors(t *testing.T) {
	k, err := New(Config{Target: "/pk", Paths: []string{"/date", "/dev/id"}, Suffix: SuffixHash, Buckets: 8, HashPaths: []string{"/vin"}})
	if err != nil {
		t.Fatal(err)
	}
	good := func() map[string]any {
		return map[string]any{"date": "d", "dev": map[string]any{"id": 7.0}, "vin": "V"}
	}
	tests := []struct {
		name   string
		mutate func(map[string]any)
		path   string
		err    error
	}{
		{"missing", func(m map[string]any) { delete(m, "date") }, "/date", ErrMissing},
		{"missing nested", func(m map[string]any) { delete(m["dev"].(map[string]any), "id") }, "/dev/id", ErrMissing},
		{"parent not object", func(m map[string]any) { m["dev"] = "x" }, "/dev/id", ErrMissing},
		{"parent array", func(m map[string]any) { m["dev"] = []any{map[string]any{"id": 1.0}} }, "/dev/id", ErrMissing},
		{"null", func(m map[string]any) { m["date"] = nil }, "/date", ErrNull},
		{"object", func(m map[string]any) { m["date"] = map[string]any{} }, "/date", ErrNotScalar},
		{"array", func(m map[string]any) { m["dev"].(map[string]any)["id"] = []any{} }, "/dev/id", ErrNotScalar},
		{"number range", func(m map[string]any) { m["date"] = 1e20 }, "/date", ErrNumberRange},
		{"unsupported", func(m map[string]any) { m["date"] = []int{1} }, "/date", ErrUnsupportedType},
		{"hash missing", func(m map[string]any) { delete(m, "vin") }, "/vin", ErrMissing},
		{"hash null", func(m map[string]any) { m["vin"] = nil }, "/vin", ErrNull},
	}
	for _, tt := range tests {
		check := func(op string, err error) {
			t.Helper()
			pe, ok := errors.AsType[*PathError](err)
			if !ok || pe.Path != tt.path || !errors.Is(err, tt.err) {
				t.Errorf("%s: %s = %v, want a *PathError for %s wrapping %v", tt.name, op, err, tt.path, tt.err)
			}
		}
		item := good()
		tt.mutate(item)
		_, err := k.PointKey(item)
		check("PointKey", err)
		before, _ := json.Marshal(item)
		_, err = k.Apply(item)
		check("Apply", err)
		if after, _ := json.Marshal(item); string(after) != string(before) {
			t.Errorf("%s: Apply changed the item on error: %s, was %s", tt.name, after, before)
		}
		if strings.HasPrefix(tt.path, "/vin") {
			_, err = k.Bucket(item)
			check("Bucket", err)
			if _, err := k.FanOutKeys(item); err != nil {
				t.Errorf("%s: FanOutKeys = %v, want no error (it needs only the base)", tt.name, err)
			}
		} else {
			_, err = k.FanOutKeys(item)
			check("FanOutKeys", err)
			_, err = k.Base(item)
			check("Base", err)
		}
	}
}

func TestApplyTarget(t *testing.T) {
	k, err := Concat("/meta/pk", "/a", "/b")
	if err != nil {
		t.Fatal(err)
	}
	item := map[string]any{"a": "x", "b": 2.0}
	key, err := k.Apply(item)
	if err != nil || key != "x-2" {
		t.Fatalf("Apply = %q, %v, want x-2", key, err)
	}
	want := map[string]any{"a": "x", "b": 2.0, "meta": map[string]any{"pk": "x-2"}}
	if d := cmp.Diff(want, item); d != "" {
		t.Errorf("item after Apply (-want +got):\n%s", d)
	}
	// An existing object on the way is kept; a stale key is overwritten.
	item = map[string]any{"a": "y", "b": true, "meta": map[string]any{"pk": "old", "n": 1.0}}
	if key, err := k.Apply(item); err != nil || key != "y-true" {
		t.Fatalf("Apply = %q, %v, want y-true", key, err)
	}
	want = map[string]any{"a": "y", "b": true, "meta": map[string]any{"pk": "y-true", "n": 1.0}}
	if d := cmp.Diff(want, item); d != "" {
		t.Errorf("item after Apply (-want +got):\n%s", d)
	}
	// A non-object on the way is refused, naming it, and nothing changes.
	item = map[string]any{"a": "y", "b": true, "meta": "str"}
	_, err = k.Apply(item)
	if pe, ok := errors.AsType[*PathError](err); !ok || pe.Path != "/meta" || !errors.Is(err, ErrNotObject) {
		t.Errorf("Apply through a string = %v, want *PathError{/meta, ErrNotObject}", err)
	}
	if item["meta"] != "str" {
		t.Errorf("Apply changed the item on error: %v", item)
	}
	if _, err := k.Apply(nil); !errors.Is(err, ErrNotObject) {
		t.Errorf("Apply(nil) = %v, want ErrNotObject", err)
	}
}

func TestSeparators(t *testing.T) {
	k, err := New(Config{Target: "/pk", Paths: []string{"/a", "/b"}, Separator: "|", Suffix: SuffixHash, Buckets: 20, HashPaths: []string{"/v"}, SuffixSeparator: "#"})
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]any{"a": "x", "b": "y", "v": "1HGCM82633A004352"}
	if got, err := k.PointKey(props); got != "x|y#3" || err != nil {
		t.Errorf("PointKey(%v) = %q, %v, want x|y#3", props, got, err)
	}
	keys, err := k.FanOutKeys(props)
	if want := []string{"x|y#1", "x|y#2", "x|y#3"}; err != nil || len(keys) != 20 || !cmp.Equal(keys[:3], want) || keys[19] != "x|y#20" {
		t.Errorf("FanOutKeys(%v) = %q, %v, want %q … x|y#20", props, keys, err, want)
	}
}

// TestKeyVectors: full keys for the three strategies, fixed forever (the
// hash-suffix ones are in the package doc).
func TestKeyVectors(t *testing.T) {
	concat, _ := Concat("/pk", "/deviceId", "/date")
	hash, _ := HashSuffix("/pk", 20, []string{"/vin"}, "/date")
	hash2, _ := HashSuffix("/pk", 100, []string{"/deviceId", "/date"}, "/date")
	num, _ := HashSuffix("/pk", 20, []string{"/n"}, "/date")
	tests := []struct {
		k     *Key
		props map[string]any
		want  string
	}{
		{concat, map[string]any{"deviceId": "dev7", "date": "2018-08-09"}, "dev7-2018-08-09"},
		{concat, map[string]any{"deviceId": 7.0, "date": true}, "7-true"},
		{hash, map[string]any{"date": "2018-08-09", "vin": "1HGCM82633A004352"}, "2018-08-09.3"},
		{hash2, map[string]any{"date": "2018-08-09", "deviceId": "dev7"}, "2018-08-09.21"},
		{num, map[string]any{"date": "d", "n": 17.0}, "d.14"},
		{num, map[string]any{"date": "d", "n": json.Number("1.7e1")}, "d.14"},
		{num, map[string]any{"date": "d", "n": int64(17)}, "d.14"},
	}
	for _, tt := range tests {
		got, err := tt.k.PointKey(tt.props)
		if got != tt.want || err != nil {
			t.Errorf("PointKey(%v) = %q, %v, want %q", tt.props, got, err, tt.want)
		}
		item := map[string]any{}
		for k, v := range tt.props {
			item[k] = v
		}
		if got, err := tt.k.Apply(item); got != tt.want || err != nil || item["pk"] != tt.want {
			t.Errorf("Apply(%v) = %q, %v (pk %v), want %q", tt.props, got, err, item["pk"], tt.want)
		}
	}
	if _, err := concat.Bucket(map[string]any{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Bucket of a concatenated key = %v, want ErrInvalidConfig", err)
	}
}

// TestDocVectors checks the hash test-vector table in doc.go, which other
// languages' implementations are checked against.
func TestDocVectors(t *testing.T) {
	f, err := os.Open("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "//\t[")
		if !ok {
			continue
		}
		end := strings.Index(line, "]")
		var values []string
		if err := json.Unmarshal([]byte("["+line[:end+1]), &values); err != nil {
			t.Fatalf("doc vector %q: %v", line, err)
		}
		fields := strings.Fields(line[end+1:])
		if len(fields) != 3 {
			t.Fatalf("doc vector %q: want hash, N, bucket", line)
		}
		wantHash, err1 := strconv.ParseUint(strings.TrimPrefix(fields[0], "0x"), 16, 32)
		buckets, err2 := strconv.Atoi(fields[1])
		wantBucket, err3 := strconv.Atoi(fields[2])
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("doc vector %q: %v", line, err)
		}
		if got := Hash(values...); got != uint32(wantHash) {
			t.Errorf("Hash(%q) = %#08x, want %#08x", values, got, wantHash)
		}
		if got := HashBucket(buckets, values...); got != wantBucket {
			t.Errorf("HashBucket(%d, %q) = %d, want %d", buckets, values, got, wantBucket)
		}
		// The same through a Key: hashed properties h0, h1, ….
		cfg := Config{Target: "/pk", Paths: []string{"/base"}, Suffix: SuffixHash, Buckets: buckets}
		props := map[string]any{"base": "b"}
		for i, v := range values {
			name := "h" + strconv.Itoa(i)
			cfg.HashPaths = append(cfg.HashPaths, "/"+name)
			props[name] = v
		}
		k, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := k.PointKey(props); got != "b."+strconv.Itoa(wantBucket) || err != nil {
			t.Errorf("PointKey(%v) = %q, %v, want b.%d", props, got, err, wantBucket)
		}
		n++
	}
	if n < 9 {
		t.Errorf("found %d test vectors in doc.go, want at least 9", n)
	}
}

// TestHashIsFNV1a checks Hash against the standard library's FNV-1a.
func TestHashIsFNV1a(t *testing.T) {
	for _, vs := range [][]string{{}, {""}, {"a"}, {"a", "b"}, {"", ""}, {"Zürich", "17", "true"}} {
		h := fnv.New32a()
		h.Write([]byte(strings.Join(vs, "\x1f")))
		if got, want := Hash(vs...), h.Sum32(); got != want {
			t.Errorf("Hash(%q) = %#08x, want %#08x", vs, got, want)
		}
	}
	if got := HashBucket(0, "a"); got != 0 {
		t.Errorf("HashBucket(0, a) = %d, want 0", got)
	}
	if got := HashBucket(MaxBuckets+1, "a"); got != 0 {
		t.Errorf("HashBucket(MaxBuckets+1, a) = %d, want 0", got)
	}
}

// TestHashSpread: sequential and random ids spread evenly enough over the
// buckets (each within ±10% of the mean).
func TestHashSpread(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2, 4, 8, 10, 16, 20, 32} {
		counts := make([]int, n+1)
		const ids = 20000
		for i := range ids {
			v := "device-" + strconv.Itoa(i)
			if i%2 == 1 {
				v = strconv.FormatUint(r.Uint64(), 36)
			}
			counts[HashBucket(n, v)]++
		}
		if counts[0] != 0 {
			t.Fatalf("HashBucket(%d, …) returned 0", n)
		}
		mean := float64(ids) / float64(n)
		for b, c := range counts[1:] {
			if math.Abs(float64(c)-mean) > 0.1*mean {
				t.Errorf("N=%d: bucket %d holds %d of %d ids, want about %.0f", n, b+1, c, ids, mean)
			}
		}
	}
}

func TestRandomSuffix(t *testing.T) {
	newKey := func() *Key {
		k, err := New(Config{Target: "/pk", Paths: []string{"/date"}, Suffix: SuffixRandom, Buckets: 5, Rand: rand.NewPCG(7, 7)})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k1, k2 := newKey(), newKey()
	seen := map[string]int{}
	for range 500 {
		a, err1 := k1.Apply(map[string]any{"date": "2018-08-09"})
		b, err2 := k2.Apply(map[string]any{"date": "2018-08-09"})
		if err1 != nil || err2 != nil || a != b {
			t.Fatalf("Apply with equal sources = %q, %v and %q, %v, want equal keys", a, err1, b, err2)
		}
		seen[a]++
	}
	keys, err := k1.FanOutKeys(map[string]any{"date": "2018-08-09"})
	want := []string{"2018-08-09.1", "2018-08-09.2", "2018-08-09.3", "2018-08-09.4", "2018-08-09.5"}
	if err != nil || !cmp.Equal(keys, want) {
		t.Fatalf("FanOutKeys = %q, %v, want %q", keys, err, want)
	}
	for _, key := range keys {
		if seen[key] < 50 {
			t.Errorf("key %s drawn %d times of 500, want about 100", key, seen[key])
		}
	}
	if len(seen) != 5 {
		t.Errorf("drew keys %v, want only %q", seen, want)
	}
	if _, err := k1.PointKey(map[string]any{"date": "x"}); !errors.Is(err, ErrRandomSuffix) {
		t.Errorf("PointKey of a random suffix = %v, want ErrRandomSuffix", err)
	}
	if _, err := k1.Bucket(map[string]any{"date": "x"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Bucket of a random suffix = %v, want ErrInvalidConfig", err)
	}
	// Without an injected source, keys still land in 1..N.
	k3, _ := RandomSuffix("/pk", 3, "/date")
	for range 100 {
		key, err := k3.Apply(map[string]any{"date": "d"})
		if err != nil || (key != "d.1" && key != "d.2" && key != "d.3") {
			t.Fatalf("Apply = %q, %v, want d.1..d.3", key, err)
		}
	}
}

// TestConcurrentApply: a Key with an injected source is safe for concurrent
// use (run with -race).
func TestConcurrentApply(t *testing.T) {
	k, err := New(Config{Target: "/pk", Paths: []string{"/a"}, Suffix: SuffixRandom, Buckets: 8, Rand: rand.NewPCG(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if _, err := k.Apply(map[string]any{"a": "x"}); err != nil {
					t.Errorf("Apply = %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestApplyJSON(t *testing.T) {
	k, _ := HashSuffix("/pk", 20, []string{"/vin"}, "/date")
	tests := []struct {
		in, out, key string
		err          error
	}{
		{`{"id":"1","date":"2018-08-09","vin":"1HGCM82633A004352"}`,
			`{"date":"2018-08-09","id":"1","pk":"2018-08-09.3","vin":"1HGCM82633A004352"}`, "2018-08-09.3", nil},
		// Numbers keep their text (no float64 round trip) and key as doubles.
		{`{"date":12345678901234567,"vin":17.0}`, "", "", ErrNumberRange},
		{`{"date":1.50,"vin":1.7e1,"big":123456789012345678901234567890}`,
			`{"big":123456789012345678901234567890,"date":1.50,"pk":"1.5.14","vin":1.7e1}`, "1.5.14", nil},
		{`{"date":null,"vin":"v"}`, "", "", ErrNull},
		{`{"date":"d"}`, "", "", ErrMissing},
		{`[1]`, "", "", ErrNotObject},
		{`"s"`, "", "", ErrNotObject},
		{`null`, "", "", ErrNotObject},
	}
	for _, tt := range tests {
		out, key, err := k.ApplyJSON([]byte(tt.in))
		if string(out) != tt.out || key != tt.key || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
			t.Errorf("ApplyJSON(%s) = %s, %q, %v, want %s, %q, %v", tt.in, out, key, err, tt.out, tt.key, tt.err)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":1} x`, `{"a":1}}`, `{"a":1}{}`} {
		if out, _, err := k.ApplyJSON([]byte(bad)); err == nil {
			t.Errorf("ApplyJSON(%q) = %s, nil, want an error", bad, out)
		}
	}
}

func TestPrepare(t *testing.T) {
	k, _ := Concat("/pk", "/a")
	pk, body, err := k.Prepare(map[string]any{"id": "1", "a": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"x","id":"1","pk":"x"}`; string(body) != want {
		t.Errorf("Prepare body = %s, want %s", body, want)
	}
	if want := azcosmos.NewPartitionKeyString("x"); !cmp.Equal(pk, want, cmp.AllowUnexported(azcosmos.PartitionKey{})) {
		t.Errorf("Prepare partition key = %v, want %v", pk, want)
	}
	if _, _, err := k.Prepare(map[string]any{"id": "1"}); !errors.Is(err, ErrMissing) {
		t.Errorf("Prepare without /a = %v, want ErrMissing", err)
	}
}

func TestAccessors(t *testing.T) {
	c, _ := Concat("/pk", "/a")
	r, _ := RandomSuffix("/x/pk", 9, "/a")
	h, _ := HashSuffix("/pk", 4, []string{"/b"}, "/a")
	tests := []struct {
		k       *Key
		target  string
		suffix  Suffix
		buckets int
	}{
		{c, "/pk", SuffixNone, 1},
		{r, "/x/pk", SuffixRandom, 9},
		{h, "/pk", SuffixHash, 4},
	}
	for _, tt := range tests {
		if tt.k.Target() != tt.target || tt.k.Suffix() != tt.suffix || tt.k.Buckets() != tt.buckets {
			t.Errorf("Key = %s %v %d, want %s %v %d", tt.k.Target(), tt.k.Suffix(), tt.k.Buckets(), tt.target, tt.suffix, tt.buckets)
		}
	}
	if keys, err := c.FanOutKeys(map[string]any{"a": "x"}); err != nil || !cmp.Equal(keys, []string{"x"}) {
		t.Errorf("FanOutKeys of a concatenated key = %q, %v, want [x]", keys, err)
	}
	for s, want := range map[Suffix]string{SuffixNone: "none", SuffixRandom: "random", SuffixHash: "hash", 9: "Suffix(9)"} {
		if s.String() != want {
			t.Errorf("Suffix(%d).String() = %q, want %q", int(s), s.String(), want)
		}
	}
}
