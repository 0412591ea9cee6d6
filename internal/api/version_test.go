package api

import (
	"net/http/httptest"
	"testing"
)

// TestNonPartitionedVersion checks which API versions may create a container
// without a partition key (those before 2018-12-31).
func TestNonPartitionedVersion(t *testing.T) {
	tests := []struct {
		version string
		want    bool
	}{
		{"2018-06-18", true}, {"2018-08-31", true}, {"2018-09-17", true}, {"2015-04-08", true},
		{"2018-12-31", false}, {"2020-07-15", false}, {"2020-11-05", false}, {"2019-10-14-preview", false},
		{"", false}, {"bogus", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/dbs/db/colls", nil)
		if tt.version != "" {
			r.Header.Set(hdrVersion, tt.version)
		}
		if got := nonPartitionedVersion(r); got != tt.want {
			t.Errorf("nonPartitionedVersion(%q) = %v, want %v", tt.version, got, tt.want)
		}
	}
}

// TestWithSystemKey checks that the system key is added only to a
// definition without a partition key.
func TestWithSystemKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"id":"c"}`, `{"id":"c","partitionKey":` + systemKeyDefinition + `}`},
		{`{"id":"c","partitionKey":null}`, `{"id":"c","partitionKey":` + systemKeyDefinition + `}`},
		{`{"id":"c","partitionKey":{"paths":["/pk"]}}`, `{"id":"c","partitionKey":{"paths":["/pk"]}}`},
		{`[]`, `[]`},
		{`null`, `null`},
		{`{`, `{`},
	}
	for _, tt := range tests {
		if got := string(withSystemKey([]byte(tt.in))); got != tt.want {
			t.Errorf("withSystemKey(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
