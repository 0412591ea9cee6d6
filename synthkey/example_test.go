package synthkey_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
