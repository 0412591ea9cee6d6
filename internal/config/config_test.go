package config

import (
	"strings"
	"testing"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Server.Addr = "nope"
	c.Store.Durability = "sometimes"
	c.Auth.Key = "***"
	c.API.Consistency = "Maybe"
	c.Server.MetricsAddr = "9090"
	c.Auth.AADJWKS = "keys.json" // without issuer and audience
	c.Store.MinFreeBytes = -1
	c.Store.BallastBytes = -1
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() of a bad config = nil")
	}
	for _, want := range []string{"addr", "durability", "key", "consistency", "metrics-addr", "aad-issuer", "aad-audience", "min-free-bytes", "ballast-bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, does not mention %s", err, want)
		}
	}
}
