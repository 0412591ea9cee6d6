package synthkey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Suffix selects how a key's suffix is chosen.
type Suffix int

const (
	// SuffixNone: the key is the concatenated base alone.
	SuffixNone Suffix = iota
	// SuffixRandom: the key is base + SuffixSeparator + a bucket 1..N drawn
	// at random on every Apply. Writes spread over N logical partitions;
	// reads must fan out over all N.
	SuffixRandom
	// SuffixHash: the key is base + SuffixSeparator + a bucket 1..N computed
	// from HashPaths (see the package doc, "Hash suffix"). Writes spread,
	// and a reader who knows the hashed properties recomputes the one key.
	SuffixHash
)

func (s Suffix) String() string {
	switch s {
	case SuffixNone:
		return "none"
	case SuffixRandom:
		return "random"
	case SuffixHash:
		return "hash"
	}
	return "Suffix(" + strconv.Itoa(int(s)) + ")"
}

const (
	// DefaultSeparator joins base values when Config.Separator is empty.
	DefaultSeparator = "-"
	// DefaultSuffixSeparator precedes the bucket number when
	// Config.SuffixSeparator is empty.
	DefaultSuffixSeparator = "."
	// MaxBuckets is the largest Config.Buckets: a fan-out over more keys
	// than this is a design error, not a key.
	MaxBuckets = 1 << 16
)

// Config describes a synthetic partition key. The zero value is not valid:
// Target and Paths are required.
type Config struct {
	// Target is the path the key is written to, the container's partition
	// key path, e.g. "/partitionKey". It must not be, contain or lie inside
	// any of Paths or HashPaths.
	Target string
	// Paths are the properties whose canonical values, in this order and
	// joined by Separator, form the base of the key. At least one, unless
	// Time is set.
	Paths []string
	// Time, if set, appends the bucket of a timestamp to the base, after
	// Paths and joined by Separator: Paths ["/deviceId"] and Time
	// {"/ts", Day} give "dev7-2024-06-01". Its Path must not overlap Target.
	Time *TimeBucket
	// Separator joins the base values; empty means DefaultSeparator ("-").
	// It is not escaped inside values.
	Separator string
	// Suffix selects the suffix; SuffixNone by default.
	Suffix Suffix
	// Buckets is N, the number of suffixes 1..N, for SuffixRandom and
	// SuffixHash: 1 ≤ N ≤ MaxBuckets. It must be 0 for SuffixNone.
	Buckets int
	// HashPaths are the properties hashed for SuffixHash (at least one);
	// they must be empty otherwise. They may repeat paths of Paths.
	HashPaths []string
	// SuffixSeparator precedes the bucket number; empty means
	// DefaultSuffixSeparator (".").
	SuffixSeparator string
	// Rand, if set, is the randomness SuffixRandom draws from (for
	// deterministic tests); the Key serialises its use. Nil means
	// math/rand/v2's top-level functions.
	Rand rand.Source
}

// Key computes a synthetic partition key from items. It is immutable and
// safe for concurrent use.
//
// Items are map[string]any values as encoding/json decodes JSON objects
// (into any, with or without UseNumber); ApplyJSON accepts raw JSON.
type Key struct {
	target    path
	paths     []path
	time      *timeBucket
	hashPaths []path
	sep       string
	suffixSep string
	suffix    Suffix
	buckets   int

	mu  sync.Mutex // guards rng
	rng *rand.Rand // nil: math/rand/v2's top-level functions
}

// New returns the Key that cfg describes. Invalid paths give a *PathError
// wrapping ErrInvalidPath; other inconsistencies give an error wrapping
// ErrInvalidConfig.
func New(cfg Config) (*Key, error) {
	k := &Key{sep: cfg.Separator, suffixSep: cfg.SuffixSeparator, suffix: cfg.Suffix, buckets: cfg.Buckets}
	if k.sep == "" {
		k.sep = DefaultSeparator
	}
	if k.suffixSep == "" {
		k.suffixSep = DefaultSuffixSeparator
	}
	var err error
	if k.target, err = parsePath(cfg.Target); err != nil {
		return nil, err
	}
	if len(cfg.Paths) == 0 && cfg.Time == nil {
		return nil, fmt.Errorf("%w: no Paths", ErrInvalidConfig)
	}
	if k.paths, err = parsePaths(cfg.Paths, k.target); err != nil {
		return nil, err
	}
	if cfg.Time != nil {
		if cfg.Time.Unit < Hour || cfg.Time.Unit > Month {
			return nil, fmt.Errorf("%w: unknown time unit %v", ErrInvalidConfig, cfg.Time.Unit)
		}
		tp, err := parsePaths([]string{cfg.Time.Path}, k.target)
		if err != nil {
			return nil, err
		}
		k.time = &timeBucket{path: tp[0], unit: cfg.Time.Unit}
	}
	if k.hashPaths, err = parsePaths(cfg.HashPaths, k.target); err != nil {
		return nil, err
	}
	switch cfg.Suffix {
	case SuffixNone:
		if cfg.Buckets != 0 || len(cfg.HashPaths) != 0 {
			return nil, fmt.Errorf("%w: Buckets or HashPaths without a suffix", ErrInvalidConfig)
		}
	case SuffixRandom, SuffixHash:
		if cfg.Buckets < 1 || cfg.Buckets > MaxBuckets {
			return nil, fmt.Errorf("%w: Buckets %d not in 1..%d", ErrInvalidConfig, cfg.Buckets, MaxBuckets)
		}
		if (cfg.Suffix == SuffixHash) != (len(cfg.HashPaths) > 0) {
			return nil, fmt.Errorf("%w: HashPaths are required for, and only for, SuffixHash", ErrInvalidConfig)
		}
	default:
		return nil, fmt.Errorf("%w: unknown %v", ErrInvalidConfig, cfg.Suffix)
	}
	if cfg.Rand != nil {
		k.rng = rand.New(cfg.Rand)
	}
	return k, nil
}

// Concat returns a key that concatenates paths with DefaultSeparator, e.g.
// Concat("/pk", "/deviceId", "/date") gives "dev7-2018-08-09".
func Concat(target string, paths ...string) (*Key, error) {
	return New(Config{Target: target, Paths: paths})
}

// RandomSuffix returns a key that appends a random bucket 1..buckets to the
// concatenated paths, e.g. "2018-08-09.17".
func RandomSuffix(target string, buckets int, paths ...string) (*Key, error) {
	return New(Config{Target: target, Paths: paths, Suffix: SuffixRandom, Buckets: buckets})
}

// HashSuffix returns a key that appends the bucket 1..buckets of the hash of
// hashPaths to the concatenated paths, e.g. date + "." + bucket(VIN).
func HashSuffix(target string, buckets int, hashPaths []string, paths ...string) (*Key, error) {
	return New(Config{Target: target, Paths: paths, Suffix: SuffixHash, Buckets: buckets, HashPaths: hashPaths})
}

// Target returns the path the key is written to, as configured.
func (k *Key) Target() string { return k.target.text }

// Suffix returns the key's suffix kind.
func (k *Key) Suffix() Suffix { return k.suffix }

// Buckets returns N, the number of keys one base spreads over: 1 for
// SuffixNone.
func (k *Key) Buckets() int { return max(k.buckets, 1) }

// Base returns the concatenation of the canonical values of Paths (and the
// Time bucket, if any). props needs only those properties. Errors are
// *PathError values wrapping ErrMissing, ErrNull, ErrNotScalar,
// ErrNumberRange, ErrUnsupportedType or (for Time) ErrNotTime.
func (k *Key) Base(props map[string]any) (string, error) {
	var arr [64]byte
	b, err := k.appendBase(arr[:0], props)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (k *Key) appendBase(dst []byte, props map[string]any) ([]byte, error) {
	for i, p := range k.paths {
		if i > 0 {
			dst = append(dst, k.sep...)
		}
		var err error
		if dst, err = p.appendValue(dst, props); err != nil {
			return dst, err
		}
	}
	if k.time != nil {
		if len(k.paths) > 0 {
			dst = append(dst, k.sep...)
		}
		return k.time.appendValue(dst, props)
	}
	return dst, nil
}

// Bucket returns the hash bucket 1..N of props' HashPaths for SuffixHash,
// and an error wrapping ErrInvalidConfig for other keys. Errors about the
// properties are as for Base.
func (k *Key) Bucket(props map[string]any) (int, error) {
	if k.suffix != SuffixHash {
		return 0, fmt.Errorf("%w: Bucket of a %v suffix", ErrInvalidConfig, k.suffix)
	}
	return k.hashBucket(props)
}

func (k *Key) hashBucket(props map[string]any) (int, error) {
	var arr [64]byte
	buf := arr[:0]
	for i, p := range k.hashPaths {
		if i > 0 {
			buf = append(buf, hashSeparator)
		}
		var err error
		if buf, err = p.appendValue(buf, props); err != nil {
			return 0, err
		}
	}
	return bucketOf(fnv1a32(buf), k.buckets), nil
}

// PointKey returns the one key under which an item with props is stored,
// for a point read or a single-partition query: props needs Paths and, for
// SuffixHash, HashPaths. It returns ErrRandomSuffix for SuffixRandom; other
// errors are as for Base.
func (k *Key) PointKey(props map[string]any) (string, error) {
	if k.suffix == SuffixRandom {
		return "", ErrRandomSuffix
	}
	var arr [64]byte
	b, err := k.compute(arr[:0], props, 0)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// compute appends the whole key; bucket 0 means "hash or none", a positive
// bucket is used as the suffix.
func (k *Key) compute(dst []byte, props map[string]any, bucket int) ([]byte, error) {
	dst, err := k.appendBase(dst, props)
	if err != nil {
		return dst, err
	}
	if k.suffix == SuffixNone {
		return dst, nil
	}
	if bucket == 0 {
		if bucket, err = k.hashBucket(props); err != nil {
			return dst, err
		}
	}
	dst = append(dst, k.suffixSep...)
	return strconv.AppendInt(dst, int64(bucket), 10), nil
}

// FanOutKeys returns every key an item with props' base may be stored under:
// the base alone for SuffixNone, base+sep+"1" … base+sep+"N" in bucket
// order for SuffixRandom and SuffixHash (the latter when the hashed
// properties are unknown, e.g. all vehicles of one date). props needs only
// Paths. Errors are as for Base. The caller owns the slice.
func (k *Key) FanOutKeys(props map[string]any) ([]string, error) {
	base, err := k.Base(props)
	if err != nil {
		return nil, err
	}
	if k.suffix == SuffixNone {
		return []string{base}, nil
	}
	// One backing string for all N keys: two allocations, not 2N.
	prefix := len(base) + len(k.suffixSep)
	buf := make([]byte, 0, k.buckets*(prefix+len(strconv.Itoa(k.buckets))))
	ends := make([]int, k.buckets)
	for i := range ends {
		buf = append(buf, base...)
		buf = append(buf, k.suffixSep...)
		buf = strconv.AppendInt(buf, int64(i+1), 10)
		ends[i] = len(buf)
	}
	all := string(buf)
	keys := make([]string, k.buckets)
	start := 0
	for i, end := range ends {
		keys[i] = all[start:end]
		start = end
	}
	return keys, nil
}

// Apply computes the key of item, drawing a new bucket for SuffixRandom,
// and sets it as a string at Target, creating missing objects on the way;
// it returns the key. Errors are as for Base, or a *PathError wrapping
// ErrNotObject when a value on the Target path is not an object. On error
// item is unchanged.
//
// NB: for SuffixRandom, replacing or upserting an item that already exists
// must reuse its stored key (read it from Target): a fresh Apply may pick
// another bucket and so create a second item with the same id.
func (k *Key) Apply(item map[string]any) (string, error) {
	if item == nil {
		return "", &PathError{Path: k.target.text, Err: ErrNotObject}
	}
	bucket := 0
	if k.suffix == SuffixRandom {
		bucket = k.drawBucket()
	}
	var arr [64]byte
	b, err := k.compute(arr[:0], item, bucket)
	if err != nil {
		return "", err
	}
	key := string(b)
	if err := k.target.set(item, key); err != nil {
		return "", err
	}
	return key, nil
}

func (k *Key) drawBucket() int {
	if k.rng == nil {
		return rand.IntN(k.buckets) + 1
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.rng.IntN(k.buckets) + 1
}

// Prepare applies the key to item (see Apply) and returns what
// ContainerClient.CreateItem, UpsertItem and ReplaceItem take: the partition
// key and the item marshalled as JSON.
func (k *Key) Prepare(item map[string]any) (azcosmos.PartitionKey, []byte, error) {
	key, err := k.Apply(item)
	if err != nil {
		return azcosmos.PartitionKey{}, nil, err
	}
	body, err := json.Marshal(item)
	if err != nil {
		return azcosmos.PartitionKey{}, nil, fmt.Errorf("synthkey: marshal item: %w", err)
	}
	return azcosmos.NewPartitionKeyString(key), body, nil
}

// ApplyJSON is Apply for an item given as a JSON object: it decodes doc
// (numbers as json.Number, so none lose precision), applies the key and
// returns the re-encoded item (properties in sorted order, as
// encoding/json writes maps) and the key. A doc that is not a JSON object
// gives a *PathError wrapping ErrNotObject with Path "" (or the decoder's
// error if it is not JSON).
func (k *Key) ApplyJSON(doc []byte) ([]byte, string, error) {
	item, err := decodeObject(doc)
	if err != nil {
		return nil, "", err
	}
	key, err := k.Apply(item)
	if err != nil {
		return nil, "", err
	}
	out, err := json.Marshal(item)
	if err != nil {
		return nil, "", fmt.Errorf("synthkey: marshal item: %w", err)
	}
	return out, key, nil
}

func decodeObject(doc []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("synthkey: decode item: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("synthkey: decode item: data after the object")
	}
	item, ok := v.(map[string]any)
	if !ok {
		return nil, &PathError{Path: "", Err: ErrNotObject}
	}
	return item, nil
}
