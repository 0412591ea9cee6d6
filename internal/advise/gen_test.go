package advise

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
