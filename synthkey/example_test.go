package synthkey_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/synthkey"
)

// Concatenation: the key of a device's readings of one day.
func ExampleConcat() {
	k, err := synthkey.Concat("/partitionKey", "/deviceId", "/date")
	if err != nil {
		panic(err)
	}
	item := map[string]any{"id": "r1", "deviceId": "dev7", "date": "2018-08-09", "temp": 21.5}
	key, err := k.Apply(item)
	fmt.Println(key, err, item["partitionKey"])

	// Numbers and booleans have canonical forms; null, objects, arrays and
	// missing properties are errors naming the path.
	key, _ = k.Base(map[string]any{"deviceId": 7.0, "date": true})
	fmt.Println(key)
	_, err = k.Apply(map[string]any{"deviceId": "dev7"})
	var pe *synthkey.PathError
	fmt.Println(errors.Is(err, synthkey.ErrMissing), errors.As(err, &pe) && pe.Path == "/date")
	// Output:
	// dev7-2018-08-09 <nil> dev7-2018-08-09
	// 7-true
	// true true
}

// Hash suffix: a day's vehicle events spread over 20 logical partitions by
// the VIN, yet one vehicle's events are read from a single partition.
func ExampleHashSuffix() {
	ctx := context.Background()
	container := exampleContainer("vehicles") // a *azcosmos.ContainerClient, partition key /partitionKey

	k, err := synthkey.HashSuffix("/partitionKey", 20, []string{"/vin"}, "/date")
	if err != nil {
		panic(err)
	}
	for i, vin := range []string{"1HGCM82633A004352", "JH4KA7561PC008269", "5YJSA1E26HF999999"} {
		event := map[string]any{"id": fmt.Sprint("e", i), "vin": vin, "date": "2018-08-09", "km": 100 * i}
		pk, body, err := k.Prepare(event) // sets event["partitionKey"]
		if err != nil {
			panic(err)
		}
		if _, err := container.CreateItem(ctx, pk, body, nil); err != nil {
			panic(err)
		}
		fmt.Println("wrote", event["id"], "under", event["partitionKey"])
	}

	// Point read: recompute the key from the date and the VIN.
	key, err := k.PointKey(map[string]any{"date": "2018-08-09", "vin": "1HGCM82633A004352"})
	if err != nil {
		panic(err)
	}
	resp, err := container.ReadItem(ctx, azcosmos.NewPartitionKeyString(key), "e0", nil)
	fmt.Println("read e0 under", key, err == nil && len(resp.Value) > 0)

	// All vehicles of the day: fan out over the 20 keys of the date.
	keys, err := k.FanOutKeys(map[string]any{"date": "2018-08-09"})
	if err != nil {
		panic(err)
	}
	res, err := synthkey.Query(ctx, container, keys, "SELECT VALUE c.vin FROM c WHERE c.km >= @km", &synthkey.FanOutOptions{
		Query: &azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@km", Value: 100}}},
	})
	if err != nil {
		panic(err)
	}
	vins, err := synthkey.Decode[string](res.Items)
	if err != nil {
		panic(err)
	}
	slices.Sort(vins)
	fmt.Println(len(keys), "keys:", vins, res.RequestCharge > 0)
	// Output:
	// wrote e0 under 2018-08-09.3
	// wrote e1 under 2018-08-09.11
	// wrote e2 under 2018-08-09.10
	// read e0 under 2018-08-09.3 true
	// 20 keys: [5YJSA1E26HF999999 JH4KA7561PC008269] true
}

// Random suffix: writes to a hot date spread over 10 logical partitions;
// reads fan out over all 10.
func ExampleRandomSuffix() {
	ctx := context.Background()
	container := exampleContainer("orders") // a *azcosmos.ContainerClient, partition key /partitionKey

	k, err := synthkey.RandomSuffix("/partitionKey", 10, "/date")
	if err != nil {
		panic(err)
	}
	for i := range 25 {
		order := map[string]any{"id": fmt.Sprintf("o%02d", i), "date": "2018-08-09", "total": i}
		pk, body, err := k.Prepare(order)
		if err != nil {
			panic(err)
		}
		if _, err := container.CreateItem(ctx, pk, body, nil); err != nil {
			panic(err)
		}
	}
	keys, err := k.FanOutKeys(map[string]any{"date": "2018-08-09"})
	if err != nil {
		panic(err)
	}
	fmt.Println(keys[0], "…", keys[len(keys)-1])

	// A point read by id alone must try every key (in parallel).
	res, err := synthkey.ReadItem(ctx, container, keys, "o07", nil)
	fmt.Println("found o07:", len(res.Items), err)
	_, err = synthkey.ReadItem(ctx, container, keys, "o99", nil)
	fmt.Println("o99:", errors.Is(err, synthkey.ErrNotFound))

	// A query runs once per key, at most 4 at a time, merged.
	res, err = synthkey.Query(ctx, container, keys, "SELECT VALUE c.total FROM c", &synthkey.FanOutOptions{Concurrency: 4})
	if err != nil {
		panic(err)
	}
	totals, _ := synthkey.Decode[int](res.Items)
	sum := 0
	for _, t := range totals {
		sum += t
	}
	// SUM is per key, so add the rows up here (or query SUM per key and
	// add those).
	fmt.Println(len(totals), "orders, total", sum)
	// Output:
	// 2018-08-09.1 … 2018-08-09.10
	// found o07: 1 <nil>
	// o99: true
	// 25 orders, total 300
}

// A Config gives separators and nested paths; Target objects are created.
func ExampleNew() {
	k, err := synthkey.New(synthkey.Config{
		Target:          "/meta/pk",
		Paths:           []string{"/tenant", "/device/id"},
		Separator:       "|",
		Suffix:          synthkey.SuffixHash,
		Buckets:         8,
		HashPaths:       []string{"/device/id"},
		SuffixSeparator: "#",
	})
	if err != nil {
		panic(err)
	}
	item := map[string]any{"id": "1", "tenant": "acme", "device": map[string]any{"id": 42}}
	key, err := k.Apply(item)
	fmt.Println(key, err, item["meta"])
	// Output: acme|42#4 <nil> map[pk:acme|42#4]
}

// ApplyJSON sets the key on raw JSON, keeping numbers exactly as written.
func ExampleKey_ApplyJSON() {
	k, err := synthkey.HashSuffix("/pk", 20, []string{"/vin"}, "/date")
	if err != nil {
		panic(err)
	}
	out, key, err := k.ApplyJSON([]byte(`{"id":"e0","date":"2018-08-09","vin":"1HGCM82633A004352","odometer":1.50}`))
	fmt.Println(key, err)
	fmt.Println(string(out))
	// Output:
	// 2018-08-09.3 <nil>
	// {"date":"2018-08-09","id":"e0","odometer":1.50,"pk":"2018-08-09.3","vin":"1HGCM82633A004352"}
}

// The documented hash, for checking another language's implementation.
func ExampleHashBucket() {
	fmt.Printf("%#08x %d\n", synthkey.Hash("1HGCM82633A004352"), synthkey.HashBucket(20, "1HGCM82633A004352"))
	v, _ := synthkey.Canonical(17.0)
	fmt.Printf("%q %d\n", v, synthkey.HashBucket(20, v))
	// Output:
	// 0x848a2802 3
	// "17" 14
}

// A time bucket: a device's readings keyed by the device and the day of
// their timestamp, so that no device's key outgrows 20 GB.
func ExampleTimeBucket() {
	k, err := synthkey.New(synthkey.Config{Target: "/partitionKey", Paths: []string{"/deviceId"},
		Time: &synthkey.TimeBucket{Path: "/ts", Unit: synthkey.Day}})
	if err != nil {
		panic(err)
	}
	reading := map[string]any{"id": "r1", "deviceId": "dev7", "ts": "2024-06-01T23:59:59.999+00:00", "temp": 21.5}
	key, err := k.Apply(reading)
	fmt.Println(key, err)

	// Epoch milliseconds (Date.now()) and an hour bucket; a query for one
	// device's hour recomputes its key.
	h, _ := synthkey.New(synthkey.Config{Target: "/pk", Paths: []string{"/deviceId"},
		Time: &synthkey.TimeBucket{Path: "/ts", Unit: synthkey.Hour}})
	key, _ = h.PointKey(map[string]any{"deviceId": "dev7", "ts": 1717286399999.0})
	fmt.Println(key)
	// Output:
	// dev7-2024-06-01 <nil>
	// dev7-2024-06-01T23
}

// A hierarchical key: tenant, then user. A whale tenant may pass 20 GB
// (each user's items must not); a query for one tenant is routed to that
// tenant's partitions only, a point read to one.
func ExampleNewHierarchy() {
	ctx := context.Background()
	h, err := synthkey.NewHierarchy(synthkey.Level{Path: "/tenantId"}, synthkey.Level{Path: "/userId"})
	if err != nil {
		panic(err)
	}
	container := exampleContainerWith("tenants", h.Definition()) // MultiHash, version 2
	for i, u := range []string{"u1", "u2", "u1"} {
		doc := map[string]any{"id": fmt.Sprint("d", i), "tenantId": "acme", "userId": u}
		pk, body, err := h.Prepare(doc)
		if err != nil {
			panic(err)
		}
		if _, err := container.CreateItem(ctx, pk, body, nil); err != nil {
			panic(err)
		}
	}
	// Point read: the whole key.
	pk, _ := h.PartitionKey(map[string]any{"tenantId": "acme", "userId": "u2"}, 2)
	resp, err := container.ReadItem(ctx, pk, "d1", nil)
	fmt.Println("read d1:", err == nil && len(resp.Value) > 0)

	// All of one tenant: the prefix, one level.
	prefix, _ := h.PartitionKey(map[string]any{"tenantId": "acme"}, 1)
	pager := container.NewQueryItemsPager("SELECT VALUE c.id FROM c", prefix, nil)
	var ids []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			panic(err)
		}
		for _, it := range page.Items {
			ids = append(ids, strings.Trim(string(it), `"`))
		}
	}
	slices.Sort(ids)
	fmt.Println("acme:", ids)
	// Output:
	// read d1: true
	// acme: [d0 d1 d2]
}
