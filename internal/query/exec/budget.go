package exec

import (
	"unsafe"

	"github.com/valyala/fastjson"
)

// A query's evaluation is bounded in memory two ways, besides the engine's
// bound on the documents it reads and buffers (a robustness review built
// gigabytes from a few kilobytes of query: an ARRAY subquery over a JOIN,
// GROUP BY and DISTINCT keys over a JOIN's rows):
//
//   - no value it builds (a string, an ARRAY subquery's array, a function's
//     result) may exceed MaxValueBytes of JSON: a row of a page is at most
//     4 MB and a stored item 2 MB, so nothing larger can be returned or
//     written anyway;
//   - what it keeps across rows (GROUP BY groups, DISTINCT's seen values,
//     MAKELIST and MAKESET, ORDER BY's buffered rows) may not exceed
//     MaxRetainedBytes in all.
//
// Past either, the run fails with a 400 naming the bound. Both count what
// a value takes in memory, not only its JSON: each array element and object
// member costs elemBytes beyond its text (sizeOf). Counted as JSON alone, a
// million one-character strings were 4 MB against bounds that allow 256, and
// took 50 MB as values: a security review made one query of a 3 MB body with
// a resource token hold 1.4 GB in GROUP BY keys split from a parameter, and
// a 10 MB array parameter alone took 2.5 GB.
const (
	MaxValueBytes    = 16 << 20
	MaxRetainedBytes = 256 << 20
)

// elemBytes is what an array element or object member costs beyond its
// JSON text: the value that holds it (48 bytes on 64-bit machines); a
// member adds its name's string header, nameBytes.
const (
	elemBytes = int(unsafe.Sizeof(value{}))
	nameBytes = int(unsafe.Sizeof(""))
)

// maxValueBytes and maxRetainedBytes are the bounds in force: the
// constants, but for tests that lower them.
var (
	maxValueBytes    = MaxValueBytes
	maxRetainedBytes = MaxRetainedBytes
)

// sizeOf returns what v costs: the size of its JSON plus elemBytes for each
// element and member at any depth (and nameBytes for each member's name),
// or a number past limit as soon as it is known to exceed limit (so that a
// value with many references to one large document fragment costs no more
// than limit to measure).
func sizeOf(v value, limit int) int {
	switch v.k {
	case kUndef:
		return 0
	case kStr:
		if v.j != nil {
			return jsonSize(v.j, limit)
		}
		return len(v.s) + 2
	case kNum, kBool, kNull:
		return 8
	}
	if v.j != nil {
		return jsonSize(v.j, limit)
	}
	if v.c.size > 0 {
		return v.c.size
	}
	// NB: not cached here: the composite may be shared between goroutines
	// (a parameter, in a parallel fan-out). Its builder may set size.
	n := 2
	for i, e := range v.c.elems {
		if v.k == kObj {
			n += len(v.c.keys[i]) + 3 + nameBytes
		}
		n += sizeOf(e, limit-n) + 1 + elemBytes
		if n > limit {
			return n
		}
	}
	return n
}

// jsonSize is sizeOf for a document's value.
func jsonSize(j *fastjson.Value, limit int) int {
	switch j.Type() {
	case fastjson.TypeString:
		return len(j.GetStringBytes()) + 2
	case fastjson.TypeArray:
		n := 2
		for _, e := range j.GetArray() {
			if n += jsonSize(e, limit-n) + 1 + elemBytes; n > limit {
				return n
			}
		}
		return n
	case fastjson.TypeObject:
		n := 2
		j.GetObject().Visit(func(k []byte, e *fastjson.Value) {
			if n <= limit {
				n += len(k) + 3 + nameBytes + jsonSize(e, limit-n) + 1 + elemBytes
			}
		})
		return n
	}
	return 8
}

// rawCost is at least what the value of a JSON text costs (sizeOf): its
// length, elemBytes for each element and member (counted by the commas and
// openings outside strings: one too many for each empty array or object)
// and nameBytes for each member. A parameter is measured so before it is
// parsed, which takes more memory than the value: a 10 MB array of numbers
// took 2.5 GB to parse and copy (a security review).
func rawCost(raw []byte) int {
	n := len(raw)
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if in {
			if c == '\\' {
				i++
			} else if c == '"' {
				in = false
			}
			continue
		}
		switch c {
		case '"':
			in = true
		case ',', '[', '{':
			n += elemBytes
		case ':':
			n += nameBytes
		}
	}
	return n
}

// tooLarge is what a function returns in place of a result it measured past
// maxValueBytes before building it (STRINGJOIN, STRINGSPLIT, OBJECTTOARRAY:
// a separator or names repeated per element can make a result many times
// its arguments' size): the call fails the run as for a result built too
// large. Its composite marks it; no string value has one.
var tooLarge = value{k: kStr, c: &composite{}}

// errValueTooLarge is the failure of a value past MaxValueBytes.
func errValueTooLarge(what string) *Error {
	return &Error{Msg: "the query builds a value larger than 16 MiB (" + what + "): no result row or item can hold it; filter the rows it is built from (fewer JOINs, a WHERE in the subquery)"}
}

// retain charges n bytes kept across rows to the run, and reports false
// (the run failed) past MaxRetainedBytes.
func (rc *runCtx) retain(n int, what string) bool {
	if rc.retained += n; rc.retained > maxRetainedBytes {
		rc.fail(&Error{Msg: "the query keeps more than 256 MiB across its rows (" + what + "): filter the rows first (fewer JOINs, a narrower WHERE) or group by fewer distinct values"})
		return false
	}
	return true
}
