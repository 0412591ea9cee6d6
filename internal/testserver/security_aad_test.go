package testserver_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/auth/authtest"
	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/server"
	"github.com/partitadb/partita/internal/testserver"
)

// The unsigned token of the hardening issue: header {} and payload {}, no signature.
const unsignedToken = "e30.e30."

const (
	aadIssuer   = "https://login.example.net/tenant-1/v2.0"
	aadAudience = "https://127.0.0.1" // what azcosmos asks for against https://127.0.0.1:port/
)

// aadFixture is a server with a database "db", a container "c" (pk /id) and an item "1".
type aadFixture struct {
	s *testserver.Server
}

func newAADFixture(t *testing.T, configure func(*config.Config)) aadFixture {
	t.Helper()
	s := testserver.Start(t, testserver.Options{Configure: configure})
	k := newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}}, nil)
	if _, err := k.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("1"), []byte(`{"id":"1","v":1}`), nil); err != nil {
		t.Fatal(err)
	}
	return aadFixture{s}
}

// do sends method path with an AAD token (raw, as the SDKs send it) and returns the status
// and body.
func (f aadFixture) do(t *testing.T, method, path, token string, body []byte) (int, string) {
	t.Helper()
	h := map[string]string{"Authorization": "type=aad&ver=1.0&sig=" + token, "x-ms-documentdb-partitionkey": `["` + itemIDOf(path, body) + `"]`}
	resp, data, err := f.s.Do(t.Context(), method, path, h, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(data)
}

// itemIDOf returns the partition key value of the requests do sends: the item id, "2" for
// creates.
func itemIDOf(path string, body []byte) string {
	if body != nil {
		return "2"
	}
	return path[strings.LastIndexByte(path, '/')+1:]
}

// The requests of the hardening issue: read an item, delete the database, and a create.
const (
	itemPath = "/dbs/db/colls/c/docs/1"
	dbPath   = "/dbs/db"
	docsPath = "/dbs/db/colls/c/docs"
)

var newItem = []byte(`{"id":"2"}`)

// TestAADUnsignedRefusedByDefault: without --emulator-compat and without --aad-jwks, the
// unsigned token (and the emulator's fake one) can neither read nor delete: 401, saying AAD
// is not configured. Before the fix both requests succeeded.
func TestAADUnsignedRefusedByDefault(t *testing.T) {
	f := newAADFixture(t, nil)
	emulator := emulatorToken(time.Now().Add(time.Hour))
	for _, tok := range []string{unsignedToken, emulator} {
		if code, body := f.do(t, "GET", itemPath, tok, nil); code != http.StatusUnauthorized || !strings.Contains(body, "not configured") {
			t.Errorf("read item with %.20s…: %d %s, want 401 saying AAD is not configured", tok, code, body)
		}
		if code, body := f.do(t, "DELETE", dbPath, tok, nil); code != http.StatusUnauthorized {
			t.Errorf("delete database with %.20s…: %d %s, want 401", tok, code, body)
		}
	}
	// The database survived.
	if resp, _, err := f.s.Do(t.Context(), "GET", dbPath, nil, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("read db with the master key: %v, %v", resp, err)
	}
}

// TestAADEmulatorCompat: --emulator-compat accepts unsigned tokens, as the Cosmos DB emulator
// does, raw and through azcosmos with the SDK emulator suite's credential.
func TestAADEmulatorCompat(t *testing.T) {
	f := newAADFixture(t, func(c *config.Config) { c.API.EmulatorCompat = true })
	if code, body := f.do(t, "GET", itemPath, unsignedToken, nil); code != http.StatusOK {
		t.Errorf("read item with the unsigned token: %d %s, want 200", code, body)
	}
	c := f.s.TokenClient(t, credentialFunc(func(policy.TokenRequestOptions) string { return emulatorToken(time.Now().Add(time.Hour)) }))
	k, _ := c.NewContainer("db", "c")
	if _, err := k.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("3"), []byte(`{"id":"3"}`), nil); err != nil {
		t.Errorf("create item with the emulator credential: %v", err)
	}
	if _, err := k.ReadItem(t.Context(), azcosmos.NewPartitionKeyString("1"), "1", nil); err != nil {
		t.Errorf("read item with the emulator credential: %v", err)
	}
	if code, body := f.do(t, "DELETE", dbPath, unsignedToken, nil); code != http.StatusNoContent {
		t.Errorf("delete database with the unsigned token: %d %s, want 204", code, body)
	}
}

// verifiedConfig configures --aad-jwks with iss's keys, aadIssuer and aadAudience, and the
// default role names.
func verifiedConfig(t *testing.T, iss *authtest.Issuer) func(*config.Config) {
	path := iss.WriteJWKS(t)
	return func(c *config.Config) {
		c.Auth.AADJWKS = path
		c.Auth.AADIssuers = []string{aadIssuer}
		c.Auth.AADAudiences = []string{aadAudience}
	}
}

// TestAADVerified: with --aad-jwks, a token signed by a configured key (RS256 or ES256) for
// the right issuer and audience gets the access its role maps to; every other token gets 401
// (403 for an authentic token without a mapped role).
func TestAADVerified(t *testing.T) {
	iss := authtest.NewIssuer(t)
	stranger := authtest.NewIssuer(t)
	f := newAADFixture(t, verifiedConfig(t, iss))
	now := time.Now()
	rw := authtest.Claims(aadIssuer, aadAudience, now, "Partita.ReadWrite")
	ro := authtest.Claims(aadIssuer, aadAudience, now, "Partita.ReadOnly")
	set := func(c map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range c {
			out[kk] = vv
		}
		out[k] = v
		return out
	}
	good := iss.RS256(t, rw)
	parts := strings.Split(good, ".")
	roParts := strings.Split(iss.RS256(t, ro), ".")

	tests := []struct {
		name         string
		token        string
		read, create int // statuses of GET item and POST docs
	}{
		{"RS256 read-write", good, 200, 201},
		{"ES256 read-write", iss.ES256(t, rw), 200, 201},
		{"RS256 read-only", iss.RS256(t, ro), 200, 403},
		{"ES256 read-only", iss.ES256(t, ro), 200, 403},
		{"no role", iss.RS256(t, set(rw, "roles", []string{})), 403, 403},
		{"expired", iss.RS256(t, set(rw, "exp", now.Add(-10*time.Minute).Unix())), 401, 401},
		{"not yet valid", iss.RS256(t, set(rw, "nbf", now.Add(10*time.Minute).Unix())), 401, 401},
		{"wrong audience", iss.RS256(t, set(rw, "aud", "https://myaccount.documents.azure.com")), 401, 401},
		{"wrong issuer", iss.RS256(t, set(rw, "iss", "https://login.example.net/tenant-2/v2.0")), 401, 401},
		{"unknown kid", authtest.Sign(t, iss.RSA, map[string]any{"alg": "RS256", "kid": "unknown"}, rw), 401, 401},
		{"signed by another key", stranger.RS256(t, rw), 401, 401},
		{"tampered signature", parts[0] + "." + parts[1] + "." + tamper(parts[2]), 401, 401},
		// A read-only token whose roles were edited to read-write, keeping its signature.
		{"tampered claims", roParts[0] + "." + base64.RawURLEncoding.EncodeToString(mustJSON(t, rw)) + "." + roParts[2], 401, 401},
		{"alg none", authtest.Unsigned(t, map[string]any{"alg": "none", "kid": authtest.RSAKeyID}, rw), 401, 401},
		{"unsigned", unsignedToken, 401, 401},
		{"emulator token", emulatorToken(now.Add(time.Hour)), 401, 401},
	}
	for _, tt := range tests {
		if code, body := f.do(t, "GET", itemPath, tt.token, nil); code != tt.read {
			t.Errorf("%s: read item: %d %s, want %d", tt.name, code, body, tt.read)
		}
		code, body := f.do(t, "POST", docsPath, tt.token, newItem)
		if code != tt.create {
			t.Errorf("%s: create item: %d %s, want %d", tt.name, code, body, tt.create)
		}
		if code == http.StatusCreated { // the next read-write case creates it again
			if resp, _, err := f.s.Do(t.Context(), "DELETE", docsPath+"/2", map[string]string{"x-ms-documentdb-partitionkey": `["2"]`}, nil); err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("delete item 2: %v, %v", resp, err)
			}
		}
		if code >= 400 && !strings.Contains(body, `"message":"`) {
			t.Errorf("%s: refusal %s without a message", tt.name, body)
		}
	}
}

// TestAADVerifiedOverridesEmulatorCompat: an explicit key set asks for verification even
// under --emulator-compat.
func TestAADVerifiedOverridesEmulatorCompat(t *testing.T) {
	iss := authtest.NewIssuer(t)
	verified := verifiedConfig(t, iss)
	f := newAADFixture(t, func(c *config.Config) { verified(c); c.API.EmulatorCompat = true })
	if code, body := f.do(t, "GET", itemPath, unsignedToken, nil); code != http.StatusUnauthorized {
		t.Errorf("read item with the unsigned token: %d %s, want 401", code, body)
	}
	if code, body := f.do(t, "GET", itemPath, iss.RS256(t, authtest.Claims(aadIssuer, aadAudience, time.Now(), "Partita.ReadOnly")), nil); code != http.StatusOK {
		t.Errorf("read item with a signed token: %d %s, want 200", code, body)
	}
}

// TestAADVerifiedThroughSDK drives azcosmos.NewClient with a token credential, as
// applications using Entra ID do: the credential signs a token for the scope the SDK asks
// for (https://127.0.0.1/.default), and the role decides what the client may do.
func TestAADVerifiedThroughSDK(t *testing.T) {
	iss := authtest.NewIssuer(t)
	f := newAADFixture(t, verifiedConfig(t, iss))
	ctx := t.Context()
	client := func(role string, exp time.Duration) *azcosmos.ContainerClient {
		c := f.s.TokenClient(t, credentialFunc(func(o policy.TokenRequestOptions) string {
			if len(o.Scopes) != 1 || o.Scopes[0] != aadAudience+"/.default" {
				t.Errorf("the SDK asked for scopes %q, want %s/.default", o.Scopes, aadAudience)
			}
			now := time.Now()
			claims := authtest.Claims(aadIssuer, strings.TrimSuffix(o.Scopes[0], "/.default"), now, role)
			claims["exp"] = now.Add(exp).Unix()
			return iss.RS256(t, claims)
		}))
		k, err := c.NewContainer("db", "c")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	pk := azcosmos.NewPartitionKeyString("5")
	writer := client("Partita.ReadWrite", time.Hour)
	if _, err := writer.CreateItem(ctx, pk, []byte(`{"id":"5"}`), nil); err != nil {
		t.Fatalf("read-write client: create: %v", err)
	}
	reader := client("Partita.ReadOnly", time.Hour)
	if r, err := reader.ReadItem(ctx, pk, "5", nil); err != nil || !strings.Contains(string(r.Value), `"id":"5"`) {
		t.Fatalf("read-only client: read: %v", err)
	}
	_, err := reader.UpsertItem(ctx, pk, []byte(`{"id":"5","v":2}`), nil)
	wantStatus(t, "read-only client: upsert", err, http.StatusForbidden)
	_, err = client("Partita.ReadWrite", -time.Hour).ReadItem(ctx, pk, "5", nil)
	wantStatus(t, "expired token: read", err, http.StatusUnauthorized)
}

// TestOpenBadJWKS: the key set is read when the server opens; a missing or unusable file
// stops it from starting.
func TestOpenBadJWKS(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"keys":[{"kty":"oct","kid":"k","k":"c2VjcmV0"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]error{filepath.Join(dir, "missing.json"): fs.ErrNotExist, bad: auth.ErrBadJWKS} {
		cfg := config.Default()
		cfg.Server.Addr = "127.0.0.1:0"
		cfg.Store.Dir = t.TempDir()
		cfg.Auth.AADJWKS, cfg.Auth.AADIssuers, cfg.Auth.AADAudiences = file, []string{aadIssuer}, []string{aadAudience}
		srv, err := server.Open(t.Context(), cfg, nil)
		if !errors.Is(err, want) {
			t.Errorf("Open with aad-jwks %s = %v, want %v", filepath.Base(file), err, want)
		}
		if err == nil {
			_ = srv.Close()
		}
	}
}

// credentialFunc is an azcore.TokenCredential whose tokens the function makes.
type credentialFunc func(policy.TokenRequestOptions) string

func (f credentialFunc) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: f(o), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// emulatorToken is the token of the azcosmos emulator suite's credential: RS256 in its
// header, the master key string as its "signature".
func emulatorToken(exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"typ":"JWT","alg":"RS256","x5t":"CosmosEmulatorPrimaryMaster","kid":"CosmosEmulatorPrimaryMaster"}`)) + "." +
		enc([]byte(`{"iss":"https://sts.fake-issuer.net/7b1999a1-dfd7-440e-8204-00170979b984","aud":"https://localhost.localhost","scp":"user_impersonation","exp":`+
			strconv.FormatInt(exp.Unix(), 10)+`}`)) + "." + enc([]byte(config.EmulatorKey))
}

// tamper changes one character in the middle of a base64url string.
func tamper(s string) string {
	b := []byte(s)
	i := len(b) / 2
	b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
	return string(b)
}
