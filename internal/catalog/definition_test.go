package catalog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/partitadb/partita/internal/partition"
)

// TestNormalizePolicy checks the indexing policy a container definition
// stores and returns, as Cosmos DB completes it.
func TestNormalizePolicy(t *testing.T) {
	const def = `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`
	tests := []struct {
		name, policy, want string // policy "" omits the member
	}{
		{"absent", "", def},
		{"null", `null`, def},
		{"empty", `{}`, def},
		{"mode only", `{"indexingMode":"Consistent"}`, def},
		{"included only", `{"includedPaths":[{"path":"/*"}]}`, def},
		{"user excluded paths get _etag after them", `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"systemMetadata\"/*"}]}`,
			`{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"systemMetadata\"/*"},{"path":"/\"_etag\"/?"}]}`},
		{"_etag already excluded", def, def},
		{"_etag excluded unquoted", `{"excludedPaths":[{"path":"/_etag/?"}]}`,
			`{"excludedPaths":[{"path":"/_etag/?"}],"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}]}`},
		{"root excluded: nothing included by default", `{"excludedPaths":[{"path":"/*"}]}`,
			`{"excludedPaths":[{"path":"/*"},{"path":"/\"_etag\"/?"}],"indexingMode":"consistent","automatic":true,"includedPaths":[]}`},
		{"none", `{"indexingMode":"none","automatic":false}`,
			`{"indexingMode":"none","automatic":false,"includedPaths":[],"excludedPaths":[]}`},
		{"legacy indexes and root path kept", `{"includedPaths":[{"path":"/","indexes":[{"kind":"Hash","dataType":"String","precision":3},{"kind":"Range","dataType":"Number"}]}]}`,
			`{"includedPaths":[{"path":"/","indexes":[{"kind":"Hash","dataType":"String","precision":3},{"kind":"Range","dataType":"Number"}]}],"indexingMode":"consistent","automatic":true,"excludedPaths":[{"path":"/\"_etag\"/?"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"id":"c","partitionKey":{"paths":["/pk"]}}`
			if tt.policy != "" {
				body = `{"id":"c","partitionKey":{"paths":["/pk"]},"indexingPolicy":` + tt.policy + `}`
			}
			d, err := parseDefinition([]byte(body), nil)
			if err != nil {
				t.Fatalf("parseDefinition(%s): %v", body, err)
			}
			var got struct{ IndexingPolicy json.RawMessage }
			if err := json.Unmarshal(d.body, &got); err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(got.IndexingPolicy, &gotV); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &wantV); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantV, gotV); diff != "" {
				t.Errorf("indexingPolicy of %s = %s (-want +got):\n%s", body, got.IndexingPolicy, diff)
			}
		})
	}
}

// TestParsePKDefinition checks partition key definitions: Cosmos DB's
// messages for bad paths and a missing key, and the system key.
func TestParsePKDefinition(t *testing.T) {
	const pathMsg = "could not be accepted, failed near position"
	tests := []struct {
		name, pk string // pk "" omits the member
		want     partition.Definition
		msg      string // a fragment of the error; "" when valid
	}{
		{name: "plain", pk: `{"paths":["/pk"]}`, want: partition.Definition{Paths: []string{"/pk"}, Kind: partition.Hash, Version: 2}},
		{name: "system key", pk: `{"paths":["/_partitionKey"],"kind":"Hash","systemKey":true}`,
			want: partition.Definition{Paths: []string{"/_partitionKey"}, Kind: partition.Hash, Version: 1, SystemKey: true}},
		{name: "systemKey false", pk: `{"paths":["/_partitionKey"],"systemKey":false}`,
			want: partition.Definition{Paths: []string{"/_partitionKey"}, Kind: partition.Hash, Version: 2}},
		{name: "system key on another path", pk: `{"paths":["/pk"],"systemKey":true}`, msg: "systemKey is only valid"},
		{name: "systemKey not a boolean", pk: `{"paths":["/pk"],"systemKey":"yes"}`, msg: "systemKey must be a boolean"},
		{name: "absent", msg: "A Partition key definition is not specified in the request."},
		{name: "null", pk: `null`, msg: "A Partition key definition is not specified in the request."},
		{name: "space", pk: `{"paths":["/id ds"]}`, msg: "The partition key component definition path '/id ds' could not be accepted, failed near position '4'. Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character."},
		{name: "no leading slash", pk: `{"paths":["pk"]}`, msg: "path 'pk' " + pathMsg + " '0'"},
		{name: "no leading slash, second level", pk: `{"paths":["/a","b"],"kind":"MultiHash"}`, msg: "path 'b' " + pathMsg + " '0'"},
		{name: "trailing slash", pk: `{"paths":["/pk/"]}`, msg: "path '/pk/' " + pathMsg + " '4'"},
		{name: "wildcard", pk: `{"paths":["/*"]}`, msg: "path '/*' " + pathMsg + " '1'"},
		{name: "nested wildcard", pk: `{"paths":["/a/*"]}`, msg: "path '/a/*' " + pathMsg + " '3'"},
		{name: "empty", pk: `{"paths":[""]}`, msg: "path '' " + pathMsg + " '0'"},
		{name: "no paths", pk: `{"paths":[]}`, msg: "no paths"},
		{name: "a path twice", pk: `{"paths":["/a","/b","/a"],"kind":"MultiHash","version":2}`, msg: "path '/a' is given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"id":"c"}`
			if tt.pk != "" {
				body = `{"id":"c","partitionKey":` + tt.pk + `}`
			}
			d, err := parseDefinition([]byte(body), nil)
			if tt.msg != "" {
				ie, ok := errors.AsType[*InvalidError](err)
				if !ok || !strings.Contains(ie.Msg, tt.msg) {
					t.Fatalf("parseDefinition(%s) = %v, want an *InvalidError with %q", body, err, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseDefinition(%s): %v", body, err)
			}
			if diff := cmp.Diff(tt.want, d.pk); diff != "" {
				t.Errorf("parseDefinition(%s).pk (-want +got):\n%s", body, diff)
			}
		})
	}
}

// TestReplaceKeepsPK checks that a replace may omit the partition key's kind,
// version and systemKey, and that paths a container already has are not
// checked again.
func TestReplaceKeepsPK(t *testing.T) {
	current := partition.Definition{Paths: []string{"/_partitionKey"}, Kind: partition.Hash, Version: 1, SystemKey: true}
	d, err := parseDefinition([]byte(`{"id":"c","partitionKey":{"paths":["/_partitionKey"]}}`), &current)
	if err != nil || !d.pk.Equal(current) {
		t.Errorf("replace of a system key = %+v, %v; want %+v", d.pk, err, current)
	}
	old := partition.Definition{Paths: []string{"/my-field"}, Kind: partition.Hash, Version: 2}
	if d, err := parseDefinition([]byte(`{"id":"c","partitionKey":{"paths":["/my-field"]}}`), &old); err != nil || !d.pk.Equal(old) {
		t.Errorf("replace of a container with an old path = %+v, %v; want %+v", d.pk, err, old)
	}
	if _, err := parseDefinition([]byte(`{"id":"c","partitionKey":{"paths":["/my-field"]}}`), nil); err == nil {
		t.Errorf("create with path /my-field succeeded, want an error")
	}
}
