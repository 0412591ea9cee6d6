package exec

import (
	"math"
	"strings"
	"time"
)

// Cosmos DB date and time values are ISO 8601 UTC strings with seven fractional digits
// ("2024-05-01T12:30:00.0000000Z"), ticks (100 ns units since the Unix epoch) or timestamps
// (milliseconds since the Unix epoch).
const dateTimeLayout = "2006-01-02T15:04:05.0000000Z"

// ticksPerSecond is the number of 100 ns ticks in a second.
const ticksPerSecond = 10_000_000

func formatDateTime(t time.Time) value {
	if y := t.Year(); y < 1 || y > 9999 {
		return undef
	}
	return str(t.UTC().Format(dateTimeLayout))
}

// parseDateTime accepts an RFC 3339 date and time (any offset, converted to UTC), the same
// without an offset (taken as UTC), or a bare date.
func parseDateTime(v value) (time.Time, bool) {
	if v.k != kStr {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v.s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// datePart normalises a date part name or abbreviation ("yyyy", "mm", "mi", ...).
func datePart(v value) (string, bool) {
	if v.k != kStr {
		return "", false
	}
	switch strings.ToLower(v.s) {
	case "year", "yyyy", "yy":
		return "year", true
	case "month", "mm", "m":
		return "month", true
	case "day", "dd", "d":
		return "day", true
	case "hour", "hh":
		return "hour", true
	case "minute", "mi", "n":
		return "minute", true
	case "second", "ss", "s":
		return "second", true
	case "millisecond", "ms":
		return "millisecond", true
	case "microsecond", "mcs":
		return "microsecond", true
	case "nanosecond", "ns":
		return "nanosecond", true
	}
	return "", false
}

// fixedUnit returns the length of a date part that has a fixed duration, in nanoseconds.
func fixedUnit(part string) (int64, bool) {
	switch part {
	case "day":
		return int64(24 * time.Hour), true
	case "hour":
		return int64(time.Hour), true
	case "minute":
		return int64(time.Minute), true
	case "second":
		return int64(time.Second), true
	case "millisecond":
		return int64(time.Millisecond), true
	case "microsecond":
		return int64(time.Microsecond), true
	case "nanosecond":
		return 1, true
	}
	return 0, false
}

// addMonths adds n months, clamping the day to the end of the month as .NET (and so Cosmos
// DB) does: Jan 31 + 1 month is Feb 28 or 29.
func addMonths(t time.Time, n int64) (time.Time, bool) {
	if n > 12*10000 || n < -12*10000 {
		return time.Time{}, false
	}
	y, m, d := t.Date()
	total := int64(y)*12 + int64(m) - 1 + n
	ny, nm := int(total/12), time.Month(total%12+1)
	last := time.Date(ny, nm+1, 0, 0, 0, 0, 0, time.UTC).Day()
	h, mi, s := t.Clock()
	return time.Date(ny, nm, min(d, last), h, mi, s, t.Nanosecond(), time.UTC), true
}

// lookupDateTime returns the date and time function named upper, if any. The GetCurrent*
// functions are compiled separately (they read the run's clock).
func lookupDateTime(upper string) (builtin, bool) {
	switch upper {
	case "DATETIMEADD":
		return builtin{3, 3, func(a []value) value {
			t, ok := parseDateTime(a[2])
			if !ok {
				return undef
			}
			return dateTimeAdd(a[0], a[1], t)
		}}, true
	case "YEAR", "MONTH", "DAY":
		// YEAR(d), MONTH(d) and DAY(d) are DateTimePart("year", d) and so on.
		part := strings.ToLower(upper)
		return builtin{1, 1, func(a []value) value {
			t, ok := parseDateTime(a[0])
			if !ok {
				return undef
			}
			switch part {
			case "year":
				return num(float64(t.Year()))
			case "month":
				return num(float64(t.Month()))
			}
			return num(float64(t.Day()))
		}}, true
	case "DATETIMEPART":
		return builtin{2, 2, func(a []value) value {
			part, ok1 := datePart(a[0])
			t, ok2 := parseDateTime(a[1])
			if !ok1 || !ok2 {
				return undef
			}
			switch part {
			case "year":
				return num(float64(t.Year()))
			case "month":
				return num(float64(t.Month()))
			case "day":
				return num(float64(t.Day()))
			case "hour":
				return num(float64(t.Hour()))
			case "minute":
				return num(float64(t.Minute()))
			case "second":
				return num(float64(t.Second()))
			case "millisecond":
				return num(float64(t.Nanosecond() / 1e6))
			case "microsecond":
				return num(float64(t.Nanosecond() / 1e3))
			}
			return num(float64(t.Nanosecond()))
		}}, true
	case "DATETIMEDIFF":
		return builtin{3, 3, func(a []value) value {
			part, ok1 := datePart(a[0])
			s, ok2 := parseDateTime(a[1])
			e, ok3 := parseDateTime(a[2])
			if !ok1 || !ok2 || !ok3 {
				return undef
			}
			switch part {
			case "year":
				return num(float64(e.Year() - s.Year()))
			case "month":
				return num(float64((e.Year()-s.Year())*12 + int(e.Month()) - int(s.Month())))
			case "day":
				day := func(t time.Time) int64 { return floorDiv(t.Unix(), 86400) }
				return num(float64(day(e) - day(s)))
			}
			// The number of unit boundaries crossed, in ticks-safe float arithmetic.
			unit, _ := fixedUnit(part)
			boundary := func(t time.Time) float64 {
				if unit >= int64(time.Second) {
					return float64(floorDiv(t.Unix(), unit/int64(time.Second)))
				}
				return float64(t.Unix())*float64(int64(time.Second)/unit) + float64(int64(t.Nanosecond())/unit)
			}
			return num(boundary(e) - boundary(s))
		}}, true
	case "DATETIMEFROMPARTS":
		return builtin{3, 7, func(a []value) value {
			var p [7]int64
			limits := [7][2]int64{{1, 9999}, {1, 12}, {1, 31}, {0, 23}, {0, 59}, {0, 59}, {0, ticksPerSecond - 1}}
			for i, v := range a {
				n, ok := toInt64(v)
				if !ok || n < limits[i][0] || n > limits[i][1] {
					return undef
				}
				p[i] = n
			}
			t := time.Date(int(p[0]), time.Month(p[1]), int(p[2]), int(p[3]), int(p[4]), int(p[5]), int(p[6])*100, time.UTC)
			if t.Day() != int(p[2]) {
				return undef // e.g. February 30
			}
			return formatDateTime(t)
		}}, true
	case "DATETIMETOTICKS":
		return builtin{1, 1, func(a []value) value {
			t, ok := parseDateTime(a[0])
			if !ok {
				return undef
			}
			return intValue(unixTicks(t))
		}}, true
	case "DATETIMETOTIMESTAMP":
		return builtin{1, 1, func(a []value) value {
			t, ok := parseDateTime(a[0])
			if !ok {
				return undef
			}
			return num(float64(t.Unix())*1000 + float64(t.Nanosecond()/1e6))
		}}, true
	case "TICKSTODATETIME":
		return builtin{1, 1, func(a []value) value {
			n, ok := toInt64(a[0])
			if !ok || n > 3e18 || n < -3e18 {
				return undef
			}
			return formatDateTime(time.Unix(floorDiv(n, ticksPerSecond), (n-floorDiv(n, ticksPerSecond)*ticksPerSecond)*100))
		}}, true
	case "TIMESTAMPTODATETIME":
		return builtin{1, 1, func(a []value) value {
			n, ok := toInt64(a[0])
			if !ok || n > 3e17 || n < -3e17 {
				return undef
			}
			return formatDateTime(time.UnixMilli(n))
		}}, true
	case "DATETIMEBIN":
		return builtin{2, 4, func(a []value) value {
			t, ok1 := parseDateTime(a[0])
			part, ok2 := datePart(a[1])
			if !ok1 || !ok2 {
				return undef
			}
			unit, ok := fixedUnit(part)
			if !ok {
				return undef
			}
			size := int64(1)
			if len(a) >= 3 {
				n, ok := toInt64(a[2])
				if !ok || n <= 0 || n > 1e12 {
					return undef
				}
				size = n
			}
			origin := time.Unix(0, 0).UTC()
			if len(a) == 4 {
				if origin, ok = parseDateTime(a[3]); !ok {
					return undef
				}
			}
			// Work in ticks (100 ns) so years 1..9999 fit in int64; below a tick, bin in ticks.
			ticks := func(t time.Time) int64 { return t.Unix()*ticksPerSecond + int64(t.Nanosecond()/100) }
			width := max(unit/100, 1)
			if width > math.MaxInt64/size {
				return undef
			}
			width *= size
			off := ticks(t) - ticks(origin)
			binned := ticks(origin) + floorDiv(off, width)*width
			return formatDateTime(time.Unix(floorDiv(binned, ticksPerSecond), (binned-floorDiv(binned, ticksPerSecond)*ticksPerSecond)*100))
		}}, true
	}
	return builtin{}, false
}

// unixTicks returns t in ticks since the Unix epoch, exactly: years 1..9999 are within
// ±2.6e18 ticks, inside int64 but far past the integers a float64 holds (2^53).
func unixTicks(t time.Time) int64 {
	return t.Unix()*ticksPerSecond + int64(t.Nanosecond()/100)
}

// dateTimeAdd is DateTimeAdd(part, n, t): n parts (a whole number) added to t.
func dateTimeAdd(partV, nV value, t time.Time) value {
	part, ok1 := datePart(partV)
	n, ok2 := toInt64(nV)
	if !ok1 || !ok2 {
		return undef
	}
	switch part {
	case "year", "month":
		if part == "year" {
			if n > math.MaxInt64/12 || n < math.MinInt64/12 {
				return undef
			}
			n *= 12
		}
		r, ok := addMonths(t, n)
		if !ok {
			return undef
		}
		return formatDateTime(r)
	}
	unit, _ := fixedUnit(part)
	if f := float64(n) * float64(unit); f > 4e20 || f < -4e20 {
		return undef // far outside years 1..9999
	}
	// Add whole seconds and a nanosecond remainder: a time.Duration spans only 292 years.
	perSec := int64(time.Second) / unit // 0 for units of a second or more
	var secs, nanos int64
	if perSec == 0 {
		secs = n * (unit / int64(time.Second))
	} else {
		secs = floorDiv(n, perSec)
		nanos = (n - secs*perSec) * unit
	}
	return formatDateTime(time.Unix(t.Unix()+secs, int64(t.Nanosecond())+nanos))
}

// clockBuiltin is a date and time function that reads the run's clock (NOW, AGO): fn
// receives the run's time and min or max evaluated arguments (NOW takes none or two).
type clockBuiltin struct {
	min, max int
	fn       func(now time.Time, args []value) value
}

// clockFunc returns NOW or AGO. NOW() is GetCurrentDateTime(); NOW(part, n) is
// DateTimeAdd(part, n, NOW()) and AGO(part, n) is DateTimeAdd(part, -n, NOW()), as
// Cosmos DB's pages for them show. Like GetCurrentDateTime they read the time the run
// started, the same for every row.
func clockFunc(upper string) (clockBuiltin, bool) {
	switch upper {
	case "NOW":
		return clockBuiltin{0, 2, func(now time.Time, a []value) value {
			if len(a) == 0 {
				return formatDateTime(now)
			}
			return dateTimeAdd(a[0], a[1], now)
		}}, true
	case "AGO":
		return clockBuiltin{2, 2, func(now time.Time, a []value) value {
			n, ok := toInt64(a[1])
			if !ok || n == math.MinInt64 {
				return undef
			}
			return dateTimeAdd(a[0], intValue(-n), now)
		}}, true
	}
	return clockBuiltin{}, false
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
