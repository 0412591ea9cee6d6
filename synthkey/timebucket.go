package synthkey

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// TimeUnit is the length of a time bucket.
type TimeUnit int

// Time units of a TimeBucket.
const (
	Hour  TimeUnit = iota + 1 // "2006-01-02T15"
	Day                       // "2006-01-02"
	Month                     // "2006-01"
)

func (u TimeUnit) String() string {
	switch u {
	case Hour:
		return "hour"
	case Day:
		return "day"
	case Month:
		return "month"
	}
	return "TimeUnit(" + strconv.Itoa(int(u)) + ")"
}

// layout is u's format, applied in UTC.
func (u TimeUnit) layout() string {
	switch u {
	case Hour:
		return "2006-01-02T15"
	case Day:
		return time.DateOnly
	}
	return "2006-01"
}

// TimeBucket puts a timestamp's bucket in a key: the hour, day or month
// (UTC) of the time at Path. Keyed by an entity and a bucket, say a device
// and the day, a device's writes go to a new logical partition every day,
// so none outgrows 20 GB, while a query for one device's day is still
// single-partition.
//
// The value at Path may be a string in RFC 3339 ("2024-06-01T13:45:12.5Z",
// any offset), without a zone ("2024-06-01T13:45:12", "2024-06-01 13:45:12"
// or "2024-06-01T13:45", taken as UTC) or a date ("2024-06-01"); a number
// (of any Go numeric type) of seconds since the Unix epoch, or of
// milliseconds when its magnitude is 10^11 or more (as JavaScript's
// Date.now()); or a time.Time. Anything else is ErrNotTime.
type TimeBucket struct {
	Path string
	Unit TimeUnit
}

type timeBucket struct {
	path path
	unit TimeUnit
}

// appendValue appends the bucket of the time at tb's path in item.
func (tb *timeBucket) appendValue(dst []byte, item map[string]any) ([]byte, error) {
	v, ok := tb.path.lookup(item)
	if !ok {
		return dst, &PathError{Path: tb.path.text, Err: ErrMissing}
	}
	t, err := timeOf(v)
	if err != nil {
		return dst, &PathError{Path: tb.path.text, Err: err}
	}
	return t.UTC().AppendFormat(dst, tb.unit.layout()), nil
}

// timeLayouts are the string forms of a time TimeBucket reads: RFC 3339,
// without a zone (taken as UTC) with a T or a space, to the minute or
// finer, and a date. partita advise proposes time buckets on the strings
// it reads as these (TestTimeLayoutsAgree in internal/advise keeps the two
// in step).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04", time.DateOnly}

// timeOf reads v as a time (see TimeBucket).
func timeOf(v any) (time.Time, error) {
	var f float64
	switch v := v.(type) {
	case time.Time:
		return v, nil
	case string:
		for _, layout := range timeLayouts {
			if t, err := time.Parse(layout, v); err == nil {
				return t, nil
			}
		}
		return time.Time{}, ErrNotTime
	case nil:
		return time.Time{}, ErrNull
	case json.Number:
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return time.Time{}, ErrNotTime
		}
		f = x
	case float64:
		f = v
	case float32:
		f = float64(v)
	case int:
		f = float64(v)
	case int8:
		f = float64(v)
	case int16:
		f = float64(v)
	case int32:
		f = float64(v)
	case int64:
		f = float64(v)
	case uint:
		f = float64(v)
	case uint8:
		f = float64(v)
	case uint16:
		f = float64(v)
	case uint32:
		f = float64(v)
	case uint64:
		f = float64(v)
	default:
		return time.Time{}, ErrNotTime
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > maxSafeInteger {
		return time.Time{}, ErrNotTime
	}
	if math.Abs(f) >= 1e11 {
		return time.UnixMilli(int64(f)), nil
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

func (tb *timeBucket) String() string { return fmt.Sprintf("%s(%s)", tb.unit, tb.path.text) }
