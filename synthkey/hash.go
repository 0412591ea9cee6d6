package synthkey

// FNV-1a, 32 bits (http://www.isthe.com/chongo/tech/comp/fnv/, RFC draft
// draft-eastlake-fnv): h = offset; for each byte: h ^= byte; h *= prime
// (mod 2^32).
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

// hashSeparator joins the canonical values of several hash paths in the
// hash input: ASCII unit separator, U+001F.
const hashSeparator = 0x1f

func fnv1a32(b []byte) uint32 {
	h := uint32(fnvOffset32)
	for _, c := range b {
		h ^= uint32(c)
		h *= fnvPrime32
	}
	return h
}

func bucketOf(h uint32, buckets int) int {
	return int(h%uint32(buckets)) + 1
}

// Hash returns the 32-bit FNV-1a hash of the UTF-8 bytes of values joined by
// U+001F: the hash input of a hash suffix whose hashed properties have these
// canonical values (see Canonical).
func Hash(values ...string) uint32 {
	h := uint32(fnvOffset32)
	for i, v := range values {
		if i > 0 {
			h ^= hashSeparator
			h *= fnvPrime32
		}
		for j := 0; j < len(v); j++ {
			h ^= uint32(v[j])
			h *= fnvPrime32
		}
	}
	return h
}

// HashBucket returns the bucket 1..buckets of values: Hash(values...) mod
// buckets, plus 1. It returns 0 when buckets is not in 1..MaxBuckets.
func HashBucket(buckets int, values ...string) int {
	if buckets < 1 || buckets > MaxBuckets {
		return 0
	}
	return bucketOf(Hash(values...), buckets)
}
