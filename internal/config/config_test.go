package config

import (
	"strings"
	"testing"
	"time"
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
	c.Server.ShutdownTimeout = -5 * time.Second
	c.Engine.QueryMemoMB = -1
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() of a bad config = nil")
	}
	for _, want := range []string{"addr", "durability", "key", "consistency", "metrics-addr", "aad-issuer", "aad-audience", "min-free-bytes", "ballast-bytes", "shutdown-timeout", "query-memo-mb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, does not mention %s", err, want)
		}
	}
}

// TestValidateSameKeys: a read-only key equal to the master key is refused:
// its holder could write (an operator hunt found it accepted silently).
func TestValidateSameKeys(t *testing.T) {
	c := Default()
	c.Auth.ReadOnlyKey = c.Auth.Key
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "read-only-key is the same as key") {
		t.Errorf("Validate() = %v, want the read-only key refused", err)
	}
}

// TestValidateCluster: --cluster-addr needs --join and a secret of 16
// bytes or more; a secret alone (an environment shared by every process)
// leaves a single node valid.
func TestValidateCluster(t *testing.T) {
	c := Default()
	c.Cluster.Secret = "some-secret-in-the-environment"
	if err := c.Validate(); err != nil {
		t.Errorf("a secret alone: Validate() = %v, want nil (a single node)", err)
	}
	c = Default()
	c.Cluster.Addr = "127.0.0.1:7001"
	c.Cluster.Secret = "short"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "join") || !strings.Contains(err.Error(), "cluster-secret") {
		t.Errorf("cluster-addr without join, short secret: Validate() = %v, want errors naming join and cluster-secret", err)
	}
	c.Cluster.Join = []string{"127.0.0.1:7001"}
	c.Cluster.Secret = "sixteen-bytes-ok"
	if err := c.Validate(); err != nil {
		t.Errorf("a valid cluster config: Validate() = %v", err)
	}
	c.Cluster.Join = []string{"127.0.0.1:7001", "127.0.0.1:7003", "127.0.0.1:7005", "127.0.0.1:7007"}
	if err := c.Validate(); err != nil {
		t.Errorf("four members, three replicas: Validate() = %v", err)
	}
	c.Cluster.Replicas = 4
	if err := c.Validate(); err != nil {
		t.Errorf("four members, four replicas: Validate() = %v", err)
	}
	c.Cluster.Replicas = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "replicas 0") {
		t.Errorf("replicas 0: Validate() = %v, want an error", err)
	}
}

// TestValidateListenerClashes: certificate files with TLS off, and a
// cluster address whose etcd port (the next one) is another listener's,
// are refused naming the clash (an operator hunt found the files ignored,
// and etcd's "address already in use" naming no cause).
func TestValidateListenerClashes(t *testing.T) {
	c := Default()
	c.Server.TLS = false
	c.Server.TLSCert, c.Server.TLSKey = "cert.pem", "key.pem"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "tls is off") {
		t.Errorf("certificate with TLS off: %v, want it refused", err)
	}
	c = Default()
	c.Server.Addr = "127.0.0.1:7002"
	c.Cluster.Addr, c.Cluster.Join, c.Cluster.Secret = "127.0.0.1:7001", []string{"127.0.0.1:7001"}, "0123456789abcdef"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "port 7002 for its etcd member, which is --addr's") {
		t.Errorf("etcd port on --addr: %v, want the clash named", err)
	}
	c.Server.Addr = "127.0.0.1:7003"
	if err := c.Validate(); err != nil {
		t.Errorf("no clash: %v", err)
	}
}
