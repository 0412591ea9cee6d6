package auth

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mustTime parses an http.TimeFormat date or fails the test.
func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := http.ParseTime(s)
	if err != nil {
		t.Fatalf("http.ParseTime(%q) = %v", s, err)
	}
	return tm
}

// mustVerifier builds a Verifier or fails the test.
func mustVerifier(t testing.TB, c Config) *Verifier {
	t.Helper()
	v, err := NewVerifier(c)
	if err != nil {
		t.Fatalf("NewVerifier = %v", err)
	}
	return v
}

// rawToken returns the unencoded master token for sig.
func rawToken(sig string) string { return "type=master&ver=1.0&sig=" + sig }

// TestVerifyVectors verifies every protocol doc §2.3 vector end to end: the path a client
// uses, the percent-encoded header it sends (upper-case hex as Go and JS send it, lower-case
// as the REST docs show it, and unencoded), at now equal to the vector date.
func TestVerifyVectors(t *testing.T) {
	verifiers := map[string]*Verifier{}
	for _, k := range []string{docKey, emulatorKey} {
		verifiers[k] = mustVerifier(t, Config{MasterKey: mustKey(t, k)})
	}
	for _, v := range vectors {
		encoded := url.QueryEscape(rawToken(v.sig))
		headers := []string{encoded, lowerHex(encoded), rawToken(v.sig)}
		for _, h := range headers {
			r := Request{Method: v.verb, RawPath: v.path, Authorization: h, Date: v.date}
			got, err := verifiers[v.key].Verify(r, mustTime(t, v.date))
			if err != nil || got != ReadWrite {
				t.Errorf("Verify(%+v) = %v, %v, want ReadWrite, nil", r, got, err)
			}
		}
		// The same vector with the other key fails, naming the payload the server signed.
		other := verifiers[docKey]
		if v.key == docKey {
			other = verifiers[emulatorKey]
		}
		r := Request{Method: v.verb, RawPath: v.path, Authorization: encoded, Date: v.date}
		_, err := other.Verify(r, mustTime(t, v.date))
		wantMsg := "Server used the following payload to sign: '" +
			strings.ReplaceAll(Payload(v.verb, v.typ, v.link, v.date), "\n", `\n`) + "'"
		if e, ok := errors.AsType[*Error](err); !ok || e.Reason != BadSignature || !strings.HasSuffix(e.Msg, wantMsg) {
			t.Errorf("Verify(%+v) with the wrong key = %v, want BadSignature ending %q", r, err, wantMsg)
		}
	}
}

// lowerHex rewrites the %XX escapes of s in lower case, as the REST docs show them.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = toLowerASCII(b[i+1])
			b[i+2] = toLowerASCII(b[i+2])
		}
	}
	return string(b)
}

func toLowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func TestBadSignatureMessage(t *testing.T) {
	// The exact message of protocol doc §2.2 for row 3 signed with the wrong key.
	v := mustVerifier(t, Config{MasterKey: mustKey(t, emulatorKey)})
	r := Request{Method: "GET", RawPath: "/dbs/ToDoList", Date: docDate,
		Authorization: MasterToken(mustKey(t, docKey), "GET", "dbs", "dbs/ToDoList", docDate)}
	_, err := v.Verify(r, mustTime(t, docDate))
	const want = "The input authorization token can't serve the request. The wrong key is being used or " +
		"the expected payload is not built as per the protocol. For more info: https://aka.ms/cosmosdb-tsg-401. " +
		`Server used the following payload to sign: 'get\ndbs\ndbs/ToDoList\nthu, 27 apr 2017 00:51:12 gmt\n\n'`
	if e, ok := errors.AsType[*Error](err); !ok || e.Reason != BadSignature || e.Msg != want {
		t.Errorf("Verify(wrong key) = %v, want BadSignature %q", err, want)
	}
}

func TestVerifyReadOnly(t *testing.T) {
	master, readOnly := mustKey(t, docKey), mustKey(t, emulatorKey)
	now := mustTime(t, docDate)
	req := func(key []byte) Request {
		return Request{Method: "GET", RawPath: "/dbs/ToDoList/colls/coll", Date: docDate,
			Authorization: MasterToken(key, "GET", "colls", "dbs/ToDoList/colls/coll", docDate)}
	}
	withRO := mustVerifier(t, Config{MasterKey: master, ReadOnlyKey: readOnly})
	withoutRO := mustVerifier(t, Config{MasterKey: master})
	tests := []struct {
		name   string
		v      *Verifier
		key    []byte
		want   Access
		reason Reason
	}{
		{"master key", withRO, master, ReadWrite, 0},
		{"read-only key", withRO, readOnly, ReadOnly, 0},
		{"read-only key not configured", withoutRO, readOnly, 0, BadSignature},
		{"unknown key", withRO, []byte("some other key"), 0, BadSignature},
	}
	for _, tt := range tests {
		got, err := tt.v.Verify(req(tt.key), now)
		if got != tt.want || reasonOf(err) != tt.reason {
			t.Errorf("%s: Verify = %v, %v, want %v, reason %v", tt.name, got, err, tt.want, tt.reason)
		}
	}
}

// reasonOf returns err's Reason, 0 for nil, or -1 for an error that is not an *Error.
func reasonOf(err error) Reason {
	if err == nil {
		return 0
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Reason
	}
	return -1
}

func TestVerifyFailures(t *testing.T) {
	key := mustKey(t, docKey)
	now := mustTime(t, docDate)
	good := MasterToken(key, "GET", "dbs", "dbs/ToDoList", docDate)
	goodSig := Sign(key, "GET", "dbs", "dbs/ToDoList", docDate)
	signAt := func(date string) string { return MasterToken(key, "GET", "dbs", "dbs/ToDoList", date) }
	v := mustVerifier(t, Config{MasterKey: key, AAD: AADConfig{Mode: AADEmulator}})
	noAAD := mustVerifier(t, Config{MasterKey: key})

	tests := []struct {
		name       string
		v          *Verifier
		method     string // GET when empty
		path       string // /dbs/ToDoList when empty
		auth, date string
		want       Reason
	}{
		{name: "control: valid", auth: good, date: docDate, want: 0},
		{name: "control: lower-case date signed and sent", auth: signAt("thu, 27 apr 2017 00:51:12 gmt"), date: "thu, 27 apr 2017 00:51:12 gmt", want: 0},
		{name: "control: UTC suffix", auth: signAt("Thu, 27 Apr 2017 00:51:12 UTC"), date: "Thu, 27 Apr 2017 00:51:12 UTC", want: 0},
		{name: "control: RFC1123Z", auth: signAt("Thu, 27 Apr 2017 02:51:12 +0200"), date: "Thu, 27 Apr 2017 02:51:12 +0200", want: 0},
		{name: "control: lower-case verb", method: "get", auth: good, date: docDate, want: 0},
		{name: "control: fields reordered", auth: url.QueryEscape("sig=" + goodSig + "&ver=1.0&type=master"), date: docDate, want: 0},
		{name: "control: unknown field ignored", auth: url.QueryEscape(rawToken(goodSig) + "&x=y"), date: docDate, want: 0},
		{name: "control: type case-insensitive", auth: url.QueryEscape("type=Master&ver=1.0&sig=" + goodSig), date: docDate, want: 0},
		{name: "control: raw header with encoded sig", auth: "type=master&ver=1.0&sig=" + url.QueryEscape(goodSig), date: docDate, want: 0},

		{name: "missing header", auth: "", date: docDate, want: Missing},

		{name: "bad escape", auth: "type%3Dmaster%26ver%3D1.0%26sig%3Dab%2", date: docDate, want: Malformed},
		{name: "bad hex escape", auth: "type%3Dmaster%zz", date: docDate, want: Malformed},
		{name: "no type", auth: url.QueryEscape("ver=1.0&sig=" + goodSig), date: docDate, want: Malformed},
		{name: "empty type", auth: url.QueryEscape("type=&ver=1.0&sig=" + goodSig), date: docDate, want: Malformed},
		{name: "no ver", auth: url.QueryEscape("type=master&sig=" + goodSig), date: docDate, want: Malformed},
		{name: "wrong ver", auth: url.QueryEscape("type=master&ver=2.0&sig=" + goodSig), date: docDate, want: Malformed},
		{name: "no sig", auth: url.QueryEscape("type=master&ver=1.0"), date: docDate, want: Malformed},
		{name: "empty sig", auth: url.QueryEscape("type=master&ver=1.0&sig="), date: docDate, want: Malformed},
		{name: "duplicate sig", auth: url.QueryEscape(rawToken(goodSig) + "&sig=" + goodSig), date: docDate, want: Malformed},
		{name: "no equals", auth: "garbage", date: docDate, want: Malformed},

		{name: "resource token not issued here", auth: url.QueryEscape("type=resource&ver=1.0&sig=abc"), date: docDate, want: Malformed},
		{name: "sas token", auth: url.QueryEscape("type=sas&ver=1.0&sig=abc"), date: docDate, want: Unsupported},
		{name: "unknown type", auth: url.QueryEscape("type=bearer&ver=1.0&sig=abc"), date: docDate, want: Unsupported},
		{name: "aad not allowed", v: noAAD, auth: "type=aad&ver=1.0&sig=" + emulatorJWT(t, now.Add(time.Hour)), date: docDate, want: Unsupported},

		{name: "date missing", auth: good, date: "", want: DateMissing},
		{name: "date unparseable", auth: good, date: "yesterday", want: DateInvalid},
		{name: "date RFC3339", auth: good, date: "2017-04-27T00:51:12Z", want: DateInvalid},
		{name: "date unknown zone", auth: good, date: "Thu, 27 Apr 2017 00:51:12 EST", want: DateInvalid},
		{name: "date single-digit day", auth: good, date: "Thu, 7 Apr 2017 00:51:12 GMT", want: DateInvalid},
		{name: "date 16m early", auth: signAt("Thu, 27 Apr 2017 00:35:12 GMT"), date: "Thu, 27 Apr 2017 00:35:12 GMT", want: DateSkew},
		{name: "date 16m late", auth: signAt("Thu, 27 Apr 2017 01:07:12 GMT"), date: "Thu, 27 Apr 2017 01:07:12 GMT", want: DateSkew},
		{name: "date 14m early ok", auth: signAt("Thu, 27 Apr 2017 00:37:12 GMT"), date: "Thu, 27 Apr 2017 00:37:12 GMT", want: 0},

		{name: "bad path", path: "/dbs/%zz", auth: good, date: docDate, want: BadPath},

		{name: "wrong verb", method: "DELETE", auth: good, date: docDate, want: BadSignature},
		{name: "wrong path", path: "/dbs/todolist", auth: good, date: docDate, want: BadSignature},
		{name: "date differs from signed", auth: signAt("Thu, 27 Apr 2017 00:51:13 GMT"), date: docDate, want: BadSignature},
		{name: "sig not base64", auth: url.QueryEscape(rawToken("!!!!")), date: docDate, want: BadSignature},
		{name: "sig too short", auth: url.QueryEscape(rawToken("AAAA")), date: docDate, want: BadSignature},
		{name: "sig too long", auth: url.QueryEscape(rawToken(strings.Repeat("A", 200))), date: docDate, want: BadSignature},
		{name: "sig with space for plus", auth: rawToken(strings.ReplaceAll(goodSig, "+", " ")), date: docDate, want: BadSignature},
	}
	for _, tt := range tests {
		vv := tt.v
		if vv == nil {
			vv = v
		}
		r := Request{Method: cmpOr(tt.method, "GET"), RawPath: cmpOr(tt.path, "/dbs/ToDoList"), Authorization: tt.auth, Date: tt.date}
		got, err := vv.Verify(r, now)
		if reasonOf(err) != tt.want {
			t.Errorf("%s: Verify(%+v) = %v, %v, want reason %v", tt.name, r, got, err, tt.want)
			continue
		}
		if err == nil && got != ReadWrite || err != nil && got != 0 {
			t.Errorf("%s: Verify(%+v) = %v, %v, want ReadWrite iff nil error", tt.name, r, got, err)
		}
		if e, ok := errors.AsType[*Error](err); ok && e.Msg == "" {
			t.Errorf("%s: Verify(%+v) = %+v, want a message", tt.name, r, e)
		}
	}
}

// cmpOr returns s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestVerifyBadPathUnwraps(t *testing.T) {
	key := mustKey(t, docKey)
	v := mustVerifier(t, Config{MasterKey: key})
	r := Request{Method: "GET", RawPath: "/dbs/%", Date: docDate, Authorization: MasterToken(key, "GET", "dbs", "dbs/%", docDate)}
	if _, err := v.Verify(r, mustTime(t, docDate)); !errors.Is(err, ErrBadPath) {
		t.Errorf("Verify(%+v) = %v, want an error wrapping ErrBadPath", r, err)
	}
}

func TestMaxSkew(t *testing.T) {
	key := mustKey(t, docKey)
	now := mustTime(t, docDate)
	tests := []struct {
		skew   time.Duration
		offset time.Duration
		want   Reason
	}{
		{0, 15 * time.Minute, 0}, // default 15m, inclusive
		{0, 15*time.Minute + time.Second, DateSkew},
		{0, -15*time.Minute - time.Second, DateSkew},
		{time.Minute, 59 * time.Second, 0},
		{time.Minute, -61 * time.Second, DateSkew},
		{time.Hour, 59 * time.Minute, 0},
	}
	for _, tt := range tests {
		v := mustVerifier(t, Config{MasterKey: key, MaxSkew: tt.skew})
		date := now.Add(tt.offset).Format(http.TimeFormat)
		r := Request{Method: "GET", RawPath: "/", Date: date, Authorization: MasterToken(key, "GET", "", "", date)}
		if _, err := v.Verify(r, now); reasonOf(err) != tt.want {
			t.Errorf("MaxSkew %v: Verify(date %s) = %v, want reason %v", tt.skew, date, err, tt.want)
		}
	}
}

func TestNewVerifier(t *testing.T) {
	if _, err := NewVerifier(Config{}); !errors.Is(err, ErrNoMasterKey) {
		t.Errorf("NewVerifier(no key) = %v, want ErrNoMasterKey", err)
	}
	if _, err := NewVerifier(Config{MasterKey: []byte("k"), MaxSkew: -time.Second}); !errors.Is(err, ErrNegativeSkew) {
		t.Errorf("NewVerifier(negative skew) = %v, want ErrNegativeSkew", err)
	}
	// The Verifier copies its keys: later changes by the caller do not affect it.
	key := mustKey(t, docKey)
	v := mustVerifier(t, Config{MasterKey: key})
	r := Request{Method: "GET", RawPath: "/", Date: docDate, Authorization: MasterToken(key, "GET", "", "", docDate)}
	key[0] ^= 0xff
	if got, err := v.Verify(r, mustTime(t, docDate)); got != ReadWrite || err != nil {
		t.Errorf("Verify after caller changed key = %v, %v, want ReadWrite, nil", got, err)
	}
}

// emulatorJWT builds an AAD token like the Go SDK's emulatorTokenCredential
// (azcosmos emulator_test.go): an unsigned JWT whose third segment is the base64url of the
// emulator master key string, with exp set to exp.
func emulatorJWT(t testing.TB, exp time.Time) string {
	t.Helper()
	return buildJWT(base64.RawURLEncoding, exp)
}

func buildJWT(enc *base64.Encoding, exp time.Time) string {
	header := `{"typ":"JWT","alg":"RS256","x5t":"CosmosEmulatorPrimaryMaster","kid":"CosmosEmulatorPrimaryMaster"}`
	iat := exp.Add(-2 * time.Hour).Unix()
	payload := `{ 
		"appid":"localhost", 
		"aio":"",
		"idp": "https://localhost:8081/",
		"oid": "96313034-4739-43cb-93cd-74193adbe5b6",
		"sub": "localhost",
		"tid": "EmulatorFederation",
		"ver": "1.0",
		"scp": "user_impersonation",
		"groups":[ "7ce1d003-4cb3-4879-b7c5-74062a35c66e"], 
		"nbf":` + strconv.FormatInt(iat, 10) + `, 
		"exp":` + strconv.FormatInt(exp.Unix(), 10) + `, 
		"iat":` + strconv.FormatInt(iat, 10) + `,
		"iss":"https://sts.fake-issuer.net/7b1999a1-dfd7-440e-8204-00170979b984",
		"aud":"https://localhost.localhost" 
	}`
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." +
		enc.EncodeToString([]byte(emulatorKey))
}

func TestVerifyAAD(t *testing.T) {
	key := mustKey(t, emulatorKey)
	now := mustTime(t, emuDate)
	v := mustVerifier(t, Config{MasterKey: key, AAD: AADConfig{Mode: AADEmulator}})
	noAAD := mustVerifier(t, Config{MasterKey: key})
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	aad := func(jwt string) string { return "type=aad&ver=1.0&sig=" + jwt }
	valid := emulatorJWT(t, now.Add(2*time.Hour))

	tests := []struct {
		name string
		v    *Verifier
		auth string
		date string
		want Reason
	}{
		{name: "emulator token", auth: aad(valid), date: emuDate},
		{name: "emulator token, no date", auth: aad(valid)},
		{name: "emulator token, percent-encoded", auth: url.QueryEscape(aad(valid)), date: emuDate},
		{name: "padded base64url", auth: aad(buildJWT(base64.URLEncoding, now.Add(time.Hour))), date: emuDate},
		{name: "no exp", auth: aad(seg(`{"alg":"none"}`) + "." + seg(`{"sub":"x"}`) + "."), date: emuDate},
		{name: "non-numeric exp ignored", auth: aad(seg(`{}`) + "." + seg(`{"exp":"soon"}`) + ".c2ln"), date: emuDate},
		{name: "float exp", auth: aad(seg(`{}`) + "." + seg(`{"exp":1.7041e9}`) + ".c2ln"), date: emuDate},

		{name: "not allowed", v: noAAD, auth: aad(valid), date: emuDate, want: Unsupported},
		{name: "expired", auth: aad(emulatorJWT(t, now.Add(-time.Second))), date: emuDate, want: TokenExpired},
		{name: "expires now", auth: aad(emulatorJWT(t, now)), date: emuDate, want: TokenExpired},
		{name: "skewed date", auth: aad(valid), date: "Mon, 01 Jan 2024 01:00:00 GMT", want: DateSkew},
		{name: "bad date", auth: aad(valid), date: "soon", want: DateInvalid},
		{name: "two segments", auth: aad(seg(`{}`) + "." + seg(`{}`)), date: emuDate, want: Malformed},
		{name: "four segments", auth: aad(valid + ".c2ln"), date: emuDate, want: Malformed},
		{name: "empty header segment", auth: aad("." + seg(`{}`) + ".c2ln"), date: emuDate, want: Malformed},
		{name: "not base64url", auth: aad("a*b." + seg(`{}`) + ".c2ln"), date: emuDate, want: Malformed},
		{name: "std base64 alphabet sig", auth: aad(seg(`{}`) + "." + seg(`{}`) + ".a+b/"), date: emuDate, want: Malformed},
		{name: "header not JSON", auth: aad(seg(`nope`) + "." + seg(`{}`) + ".c2ln"), date: emuDate, want: Malformed},
		{name: "payload an array", auth: aad(seg(`{}`) + "." + seg(`[1]`) + ".c2ln"), date: emuDate, want: Malformed},
		{name: "payload null", auth: aad(seg(`{}`) + "." + seg(`null`) + ".c2ln"), date: emuDate, want: Malformed},
		{name: "opaque bearer token", auth: aad("opaque-token"), date: emuDate, want: Malformed},
	}
	for _, tt := range tests {
		vv := tt.v
		if vv == nil {
			vv = v
		}
		r := Request{Method: "POST", RawPath: "/dbs", Authorization: tt.auth, Date: tt.date}
		got, err := vv.Verify(r, now)
		want := Access(0)
		if tt.want == 0 {
			want = ReadWrite
		}
		if reasonOf(err) != tt.want || got != want {
			t.Errorf("%s: Verify(%+v) = %v, %v, want %v, reason %v", tt.name, r, got, err, want, tt.want)
		}
	}
}

func TestReasonString(t *testing.T) {
	seen := map[string]bool{}
	for r := Missing; r <= lastReason; r++ {
		s := r.String()
		if s == "" || s == Reason(0).String() || seen[s] {
			t.Errorf("Reason(%d).String() = %q, want a distinct name", int(r), s)
		}
		seen[s] = true
	}
}

func BenchmarkVerify(b *testing.B) {
	key := mustKey(b, emulatorKey)
	now := mustTime(b, emuDate)
	cases := []struct {
		name string
		path string
		typ  string
		link string
	}{
		{"doc", "/dbs/testdb/colls/testcoll/docs/item1", "docs", "dbs/testdb/colls/testcoll/docs/item1"},
		{"doc-escaped", "/dbs/testdb/colls/testcoll/docs/item%201", "docs", "dbs/testdb/colls/testcoll/docs/item 1"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			v := mustVerifier(b, Config{MasterKey: key, ReadOnlyKey: mustKey(b, docKey)})
			r := Request{Method: "GET", RawPath: c.path, Date: emuDate, Authorization: MasterToken(key, "GET", c.typ, c.link, emuDate)}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(r, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("bad-signature", func(b *testing.B) {
		v := mustVerifier(b, Config{MasterKey: key})
		r := Request{Method: "GET", RawPath: "/dbs/testdb", Date: emuDate, Authorization: MasterToken([]byte("x"), "GET", "dbs", "dbs/testdb", emuDate)}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(r, now); err == nil {
				b.Fatal("Verify succeeded")
			}
		}
	})
	b.Run("aad", func(b *testing.B) {
		v := mustVerifier(b, Config{MasterKey: key, AAD: AADConfig{Mode: AADEmulator}})
		r := Request{Method: "GET", RawPath: "/dbs/testdb", Date: emuDate, Authorization: "type=aad&ver=1.0&sig=" + emulatorJWT(b, now.Add(time.Hour))}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(r, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkResource(b *testing.B) {
	for _, p := range []string{"/dbs/testdb/colls/testcoll/docs/item1", "/dbs/testdb/colls/testcoll/docs/item%201"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Resource(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
