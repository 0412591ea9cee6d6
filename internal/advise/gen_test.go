package advise

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// ordersData is n days of orders, perDay a day, written on their date:
// a unique /id, a hot /date (every day's writes on that day's date), a
// low-cardinality /status (60% "shipped"), and /amount with 500 values.
func ordersData(days, perDay int) []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	var b bytes.Buffer
	n := 0
	for d := range days {
		for range perDay {
			n++
			st := "shipped"
			switch r := rng.IntN(10); {
			case r >= 9:
				st = "cancelled"
			case r >= 6:
				st = "pending"
			}
			fmt.Fprintf(&b, `{"id":"o-%07d","date":"2024-05-%02d","status":%q,"amount":%d,"_rid":"x%d","_ts":%d}`+"\n",
				n, d+1, st, 1+rng.IntN(500), n, 1714521600+d*86400)
		}
	}
	return b.Bytes()
}

// readingsData is device telemetry: devices devices each writing about
// perDevice readings a day for days days, with /deviceId, /date, /ts
// (RFC 3339), a unique /id and a nested /sensor/kind of 4 values.
func readingsData(devices, days, perDevice int) []byte {
	rng := rand.New(rand.NewPCG(3, 9))
	var b bytes.Buffer
	n := 0
	kinds := []string{"temp", "hum", "co2", "pm25"}
	for d := range days {
		for range devices * perDevice {
			n++
			dev := rng.IntN(devices)
			sec := rng.IntN(86400)
			fmt.Fprintf(&b, `{"id":"r%d","deviceId":"dev%04d","date":"2024-06-%02d","ts":"2024-06-%02dT%02d:%02d:%02dZ","sensor":{"kind":%q,"value":%.1f}}`+"\n",
				n, dev, d+1, d+1, sec/3600, sec/60%60, sec%60, kinds[rng.IntN(4)], rng.Float64()*40)
		}
	}
	return b.Bytes()
}

// vinData is a fleet of vins vehicles, each writing perDay readings a day
// for days days: /vin, /date and a unique /id.
func vinData(vins, days, perDay int) []byte {
	var b bytes.Buffer
	n := 0
	for d := range days {
		for range perDay {
			for v := range vins {
				n++
				fmt.Fprintf(&b, `{"id":"t%d","vin":"1HGCM82633A%06d","date":"2024-07-%02d","speed":%d}`+"\n", n, v, d+1, n%120)
			}
		}
	}
	return b.Bytes()
}

// tenantsData is a multi-tenant store: tenants tenants, the first whales of
// them holding whaleShare of the items over many users, the rest a few
// users each; /tenantId, /userId (unique across tenants), a unique /id
// and a /kind of 5 values.
func tenantsData(tenants, whales int, whaleShare float64, n int) []byte {
	rng := rand.New(rand.NewPCG(11, 5))
	var b bytes.Buffer
	kinds := []string{"order", "invoice", "note", "task", "event"}
	for i := range n {
		var t, u int
		if rng.Float64() < whaleShare {
			t = rng.IntN(whales)
			u = rng.IntN(400)
		} else {
			t = whales + rng.IntN(tenants-whales)
			u = rng.IntN(8)
		}
		fmt.Fprintf(&b, `{"id":"d%d","tenantId":"t%03d","userId":"t%03d-u%03d","kind":%q}`+"\n", i, t, t, u, kinds[rng.IntN(5)])
	}
	return b.Bytes()
}

// telemetryData is devices devices reporting for days days from
// 2024-06-01, perDay readings a day each, with only a timestamp: /deviceId,
// /ts (RFC 3339 at ms resolution if ms, else seconds), a unique /id, and
// measurements /temp, /hum (fractional) and /fw (a padding string).
func telemetryData(devices, days, perDay int, ms bool) []byte {
	rng := rand.New(rand.NewPCG(5, 17))
	var b bytes.Buffer
	n := 0
	start := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	pad := strings.Repeat("x", 150)
	for d := range days {
		for range devices * perDay {
			n++
			at := start.Add(time.Duration(d)*24*time.Hour + time.Duration(rng.Int64N(int64(24*time.Hour))))
			ts := at.Format("2006-01-02T15:04:05Z")
			if ms {
				ts = at.Format("2006-01-02T15:04:05.000Z")
			}
			fmt.Fprintf(&b, `{"id":"m%d","deviceId":"dev%02d","ts":%q,"temp":%.2f,"hum":%.2f,"fw":"%s%d"}`+"\n",
				n, rng.IntN(devices), ts, 15+rng.Float64()*10, 30+rng.Float64()*40, pad, n)
		}
	}
	return b.Bytes()
}

// iotData is devices devices writing through days days, perDay readings a
// day each: /deviceId, /date, /ts (seconds), a unique /id and measurements.
func iotData(devices, days, perDay int) []byte {
	rng := rand.New(rand.NewPCG(9, 1))
	var b bytes.Buffer
	n := 0
	start := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for d := range days {
		for range devices * perDay {
			n++
			at := start.Add(time.Duration(d)*24*time.Hour + time.Duration(rng.IntN(86400))*time.Second)
			fmt.Fprintf(&b, `{"id":"i%d","deviceId":"dev%02d","date":%q,"ts":%q,"temp":%.2f,"volt":%.3f}`+"\n",
				n, rng.IntN(devices), at.Format(time.DateOnly), at.Format(time.RFC3339), 15+rng.Float64()*10, 3+rng.Float64())
		}
	}
	return b.Bytes()
}
