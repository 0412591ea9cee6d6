package catalog

import "github.com/valyala/fastjson"

// DefaultTTL is the container's time-to-live setting, its defaultTtl: on is
// false when time to live is off (no defaultTtl, or null), and item ttls
// are then ignored; seconds is -1 when items do not expire unless their own
// ttl says so, otherwise the seconds after its last write an item without
// a ttl of its own expires.
func (c *Container) DefaultTTL() (seconds int64, on bool) { return c.ttl, c.ttlOn }

// parseDefaultTTL reads defaultTtl from a container definition that
// parseDefinition has validated.
func parseDefaultTTL(v *fastjson.Value) (seconds int64, on bool) {
	t := v.Get("defaultTtl")
	if t == nil || t.Type() == fastjson.TypeNull {
		return 0, false
	}
	n, err := t.Int64()
	if err != nil {
		return 0, false
	}
	return n, true
}
