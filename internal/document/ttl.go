package document

import (
	"fmt"
	"math"
	"strconv"
)

// TTL reads an item's own time to live, its top-level "ttl" member, from
// item JSON: present is false when there is none. A ttl must be -1 (the item
// never expires) or a whole number of seconds from 1 to 2^31-1; anything
// else, null included, is an *InvalidError with Cosmos DB's message, e.g.
// "The input ttl 'null' is invalid. Ensure to provide a nonzero positive
// integer less than or equal to '2147483647', or '-1' which means never
// expire." (the value is quoted as written, at most 40 bytes of it). Whether
// it applies, and so whether the engine checks it, depends on the
// container's default time to live.
func TTL(item []byte) (ttl int64, present bool, err error) {
	root, err := scanRoot(item, nil, false)
	if err != nil {
		return 0, false, &InvalidError{Msg: fmt.Sprintf("invalid JSON: %v", err)}
	}
	vs, ve, ok := findMember(item, root, "ttl")
	if !ok {
		return 0, false, nil
	}
	return parseTTL(item[vs:ve])
}

// TTL is [TTL] of the item's JSON as Marshal writes it, read from the
// parse ParseItem made: the last top-level "ttl" member, its value quoted
// in errors without white space, as Marshal copies it.
func (it *Item) TTL() (ttl int64, present bool, err error) {
	for j := len(it.members) - 1; j >= 0; j-- {
		if m := it.members[j]; keyIs(it.body, m, "ttl") {
			ttl, present, err := parseTTL(it.body[m.vs:m.ve])
			if err != nil {
				// A number has no white space in it: only the message
				// can differ, and it quotes the value as stored.
				_, _, err = parseTTL(appendCompact(nil, it.body[m.vs:m.ve]))
			}
			return ttl, present, err
		}
	}
	return 0, false, nil
}

// parseTTL checks the JSON value of a ttl member (see TTL).
func parseTTL(v []byte) (int64, bool, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n == 0 || n < -1 || n > math.MaxInt32 {
		return 0, false, &InvalidError{Msg: fmt.Sprintf("The input ttl '%.40s' is invalid. Ensure to provide a nonzero positive "+
			"integer less than or equal to '2147483647', or '-1' which means never expire.", v)}
	}
	return n, true, nil
}

// ExpiresAt returns when a stored item expires, in Unix seconds, under a
// container default time to live of defaultTTL seconds (-1: items do not
// expire unless their own ttl says so): its last write (_ts) plus its own
// valid ttl if it has one, else plus the default. never is true when it
// does not expire.
func ExpiresAt(ts int64, itemTTL int64, hasItemTTL bool, defaultTTL int64) (at int64, never bool) {
	ttl := defaultTTL
	if hasItemTTL {
		ttl = itemTTL
	}
	if ttl < 0 {
		return 0, true
	}
	return ts + ttl, false
}
