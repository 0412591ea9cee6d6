package partition

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/murmur3"

	"github.com/partitadb/partita/internal/document"
)

func str(s string) document.PKValue                    { return document.PKValue{Kind: document.String, String: s} }
func num(f float64) document.PKValue                   { return document.PKValue{Kind: document.Number, Number: f} }
func boolean(b bool) document.PKValue                  { return document.PKValue{Kind: document.Bool, Bool: b} }
func null() document.PKValue                           { return document.PKValue{Kind: document.Null} }
func undefined() document.PKValue                      { return document.PKValue{Kind: document.Undefined} }
func key(vs ...document.PKValue) document.PartitionKey { return document.PartitionKey(vs) }

var (
	defV1 = Definition{Paths: []string{"/pk"}, Kind: Hash, Version: 1}
	defV2 = Definition{Paths: []string{"/pk"}, Kind: Hash, Version: 2}
)

func multi(n int) Definition {
	paths := []string{"/a", "/b", "/c"}[:n]
	return Definition{Paths: paths, Kind: MultiHash, Version: 2}
}

func pkString(v document.PKValue) string {
	switch v.Kind {
	case document.String:
		if len(v.String) > 24 {
			return fmt.Sprintf("%q…(%d bytes)", v.String[:12], len(v.String))
		}
		return fmt.Sprintf("%q", v.String)
	case document.Number:
		return fmt.Sprint(v.Number)
	case document.Bool:
		return fmt.Sprint(v.Bool)
	case document.Null:
		return "null"
	}
	return "undefined"
}

// vector is one row of protocol doc §5.3.
type vector struct {
	v        document.PKValue
	murmur32 string // "" when the doc gives none
	v1       string // service/.NET column; "" when the doc gives none
	v2       string // "" when the doc gives none
}

func vectors() []vector {
	a100V1 := "05C1EB5921F70608" + strings.Repeat("62", 100) + "00"
	return []vector{
		// §5.3 main table (rows 1-19).
		{str(""), "3CCCB0FF", "05C1CF33970FF80800", "32E9366E637A71B4E710384B2F4970A0"},
		{str("asdf"), "B02BABC2", "05C1E7035DAF84086274656700", "208BF1D598F5B63AD5520F04FE58C5E8"},
		{str("partition1"), "2A55EA55", "05C1C595BDA5A808716273756A756A706F3200", "3725AD2A5890E4EE01F38ECC271F8DB7"},
		{str("Ünïcödé-鱀-😀"), "B5E9A66E", "05C1E75F4D99DC08C49D6FC4B064C4B765C4AA2EEAB2812EF1A0998100", "292E9749CD87B23474781FDC5AB7193E"},
		{str(strings.Repeat("a", 100)), "D5843D83", a100V1, "0DBD7D229437BB665DE6417747994D57"},
		{str(strings.Repeat("a", 101)), "D5843D83", a100V1, "08042541D30C8BF90D7092B1519AE0BC"},
		{str(strings.Repeat("鱀", 40)), "FED5E003", "05C1EFEDAF810608" + strings.Repeat("EAB281", 33) + "EAB2", "3F19DE79808B977C503F44223A53B1E7"},
		{num(0), "1EDA80A6", "05C1BF6DA11560058000", "155B95BEDAC4B1E9EC1CDC9BB0DDDE58"},
		{num(1), "E1655A93", "05C1ED172B6B2605BFF0", "20CD98B339BA78A5D0CF6953B87070B0"},
		{num(2), "61A6820E", "05C1D93569113805C000", "11BEC098BB8A08943F0A144281ACC26C"},
		{num(-1), "452BDBE7", "05C1D1A5BDDF9C054010", "19938E7A936C1C5B9E3AE842BBC16839"},
		{num(42), "B5F9499D", "05C1E75FCB273A05C04580", "08E6D561F6FD951DCC25E7E4EA2884B5"},
		{num(3.14159), "D82CBFDE", "05C1EB8365FFBC05C009917F3F01DD19DC", "01F6E65F21D72B6E2E3F1D159DDCD3F5"},
		{num(1e21), "90077AB7", "05C1E3013BEB6E05C44B8DB99B6F17BDA0", "00F95F627D6884BCDB7D661839BEB420"},
		{num(-123.456), "0F3FF67B", "05C1AF3FFB9F60053FA191B51D57030712", "1757D540B589DD9962861CED15A7DA57"},
		{boolean(true), "5E2A8076", "05C1D7C5A903D803", "0E711127C5B5A8E4726AC6DD306A3E59"},
		{boolean(false), "6C27D09F", "05C1DB857D857C02", "2FE1BE91E90A3439635E0E9E37361EF2"},
		{null(), "E45AD1AB", "05C1ED45D7475601", "378867E4430E67857ACE5C908374FE16"},
		{undefined(), "514E28B7", "05C1D529E345DC00", "11622DAA78F835834610ABE56EFF5CB5"},
		// §5.3 vectors from the JS SDK's unit tests.
		{str("partitionKey"), "", "05C1E1B3D9CD2608716273756A756A706F4C667A00", ""},
		{str("redmond"), "", "05C1EFE313830C087366656E706F6500", "22E342F38A486A088463DFF7838A5963"},
		{str("aa"), "", "05C1C7B7270FE008626200", "05033626483AE80D00E44FBD35362B19"},
		{str(strings.Repeat("a", 110)), "D5843D83", a100V1, "0BA3E9CA8EE4C14538828D1612A4B652"},
		{num(5), "", "05C1D9C1C5517C05C014", "19C08621B135968252FB34B4CF66F811"},
		{num(5.5), "", "05C1D7A771716C05C016", "0E2EE47829D1AF775EEFB6540FD1D0ED"},
		{num(12313.1221), "", "05C1ED154D592E05C0C90723F50FC925D8", "27E7ECA8F2EE3E53424DE8D5220631C6"},
		{num(123456789), "", "05C1D9E1A5311C05C19DB7CD8B40", "1F56D2538088EBA82CCF988F36E16760"},
	}
}

func TestHashV1(t *testing.T) {
	for _, tt := range vectors() {
		if tt.v1 == "" {
			continue
		}
		got, err := defV1.Hash(key(tt.v))
		if err != nil {
			t.Errorf("V1 Hash(%s) error %v", pkString(tt.v), err)
			continue
		}
		if got.String() != tt.v1 {
			t.Errorf("V1 Hash(%s) = %s, want %s", pkString(tt.v), got, tt.v1)
		}
	}
}

// TestMurmur32 checks the murmur3_32 column: the hash of the truncated V1
// hash input, which is also the number encoded at the start of the V1 EPK.
func TestMurmur32(t *testing.T) {
	for _, tt := range vectors() {
		if tt.murmur32 == "" {
			continue
		}
		c := tt.v
		if c.Kind == document.String {
			c.String = truncateV1(c.String)
		}
		got := fmt.Sprintf("%08X", murmur3.Sum32(appendHashInput(nil, c, 0x00)))
		if got != tt.murmur32 {
			t.Errorf("murmur3_32(V1 input of %s) = %s, want %s", pkString(tt.v), got, tt.murmur32)
		}
	}
}

func TestHashV2(t *testing.T) {
	for _, tt := range vectors() {
		if tt.v2 == "" {
			continue
		}
		got, err := defV2.Hash(key(tt.v))
		if err != nil {
			t.Errorf("V2 Hash(%s) error %v", pkString(tt.v), err)
			continue
		}
		if got.String() != tt.v2 {
			t.Errorf("V2 Hash(%s) = %s, want %s", pkString(tt.v), got, tt.v2)
		}
		// A one-path MultiHash container hashes a key like V2.
		gotM, err := multi(1).Hash(key(tt.v))
		if err != nil || gotM.String() != tt.v2 {
			t.Errorf("MultiHash(1 path) Hash(%s) = %s, %v; want %s", pkString(tt.v), gotM, err, tt.v2)
		}
	}
}

// TestHashV2Raw checks the un-masked V2 hashes against the .NET baselines.
func TestHashV2Raw(t *testing.T) {
	tests := []struct {
		v    document.PKValue
		want string
	}{
		{str(""), "B2E9366E637A71B4E710384B2F4970A0"},
		{str("asdf"), "608BF1D598F5B63AD5520F04FE58C5E8"},
		{num(0), "555B95BEDAC4B1E9EC1CDC9BB0DDDE58"},
		{num(1), "A0CD98B339BA78A5D0CF6953B87070B0"},
		{boolean(true), "4E711127C5B5A8E4726AC6DD306A3E59"},
		{null(), "778867E4430E67857ACE5C908374FE16"},
	}
	for _, tt := range tests {
		h := hashV2Raw(appendHashInput(nil, tt.v, 0xFF))
		if got := EPK(h[:]).String(); got != tt.want {
			t.Errorf("hashV2Raw(%s) = %s, want %s", pkString(tt.v), got, tt.want)
		}
	}
}

// TestHashV2Combined checks a single V2 hash over several components, which
// the protocol doc gives though no valid definition produces it.
func TestHashV2Combined(t *testing.T) {
	tests := []struct {
		pk   document.PartitionKey
		want string
	}{
		{key(str("redmond"), num(50), num(5.5), boolean(true), boolean(false), null(), str(""), num(12313.1221)), "1A5E512F591E980E07A6D8AD5BD5AB2F"},
		{key(str("parent1"), str("child1")), "04E08629EEF99B68E03812B9DD678C17"},
	}
	for _, tt := range tests {
		if got := EPK(appendV2(nil, tt.pk)).String(); got != tt.want {
			t.Errorf("appendV2(%d components) = %s, want %s", len(tt.pk), got, tt.want)
		}
	}
}

func TestHashMulti(t *testing.T) {
	tests := []struct {
		pk   document.PartitionKey
		want string
	}{
		{key(str("parent1"), str("child1")), "1951CD3E30B5BDF1610DAE2D15FAF60207A06FA7F03D04683767E8328D127DCD"},
		{key(str("1"), str("alpha")), "3C80B1B7310BB39F29CC4EA05BDD461E14F3157FF51E396B3DEDB97CA8071424"},
		{key(str("a"), num(5), boolean(true)), "3A5381E1114EB8D3FCC90795045B49B719C08621B135968252FB34B4CF66F8110E711127C5B5A8E4726AC6DD306A3E59"},
		{key(null(), str("x")), "378867E4430E67857ACE5C908374FE1611E3F358618BE9AA5BAFF4C7C74F0716"},
	}
	for _, tt := range tests {
		got, err := multi(len(tt.pk)).Hash(tt.pk)
		if err != nil {
			t.Errorf("MultiHash Hash(%v) error %v", tt.pk, err)
			continue
		}
		if got.String() != tt.want {
			t.Errorf("MultiHash Hash(%v) = %s, want %s", tt.pk, got, tt.want)
		}
	}
}

func TestSpan(t *testing.T) {
	tests := []struct {
		name     string
		d        Definition
		pk       document.PartitionKey
		min, max string
	}{
		{"prefix of 2-level key", multi(2), key(str("parent1")),
			"1951CD3E30B5BDF1610DAE2D15FAF602", "1951CD3E30B5BDF1610DAE2D15FAF602FF"},
		{"prefix of 3-level key", multi(3), key(str("a"), num(5)),
			"3A5381E1114EB8D3FCC90795045B49B719C08621B135968252FB34B4CF66F811",
			"3A5381E1114EB8D3FCC90795045B49B719C08621B135968252FB34B4CF66F811FF"},
		{"full MultiHash key", multi(2), key(null(), str("x")),
			"378867E4430E67857ACE5C908374FE1611E3F358618BE9AA5BAFF4C7C74F0716",
			"378867E4430E67857ACE5C908374FE1611E3F358618BE9AA5BAFF4C7C74F071600"},
		{"full V2 key", defV2, key(str("asdf")), "208BF1D598F5B63AD5520F04FE58C5E8", "208BF1D598F5B63AD5520F04FE58C5E800"},
		{"full V1 key", defV1, key(str("asdf")), "05C1E7035DAF84086274656700", "05C1E7035DAF8408627465670000"},
		{"empty key V2", defV2, key(), "", "FF"},
		{"empty key MultiHash", multi(3), key(), "", "FF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			min, max, err := tt.d.Span(tt.pk)
			if err != nil {
				t.Fatalf("Span(%v) error %v", tt.pk, err)
			}
			if min.String() != tt.min || max.String() != tt.max {
				t.Errorf("Span(%v) = [%s, %s), want [%s, %s)", tt.pk, min, max, tt.min, tt.max)
			}
		})
	}
}

// TestSpanContainsChildren checks that every full key extending a prefix
// falls inside the prefix's span, and that the point span of a full key
// holds exactly its EPK.
func TestSpanContainsChildren(t *testing.T) {
	d := multi(3)
	pmin, pmax, err := d.Span(key(str("tenant")))
	if err != nil {
		t.Fatal(err)
	}
	r := Range{ID: "x", Min: pmin, Max: pmax}
	for i := range 1000 {
		full := key(str("tenant"), num(float64(i)), str(fmt.Sprint("c", i)))
		e, err := d.Hash(full)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Contains(e) {
			t.Fatalf("prefix span [%s, %s) does not contain %s (key %v)", pmin, pmax, e, full)
		}
		min, max, err := d.Span(full)
		if err != nil {
			t.Fatal(err)
		}
		pt := Range{ID: "p", Min: min, Max: max}
		if !bytes.Equal(min, e) || !pt.Contains(e) || pt.Contains(append(bytes.Clone(e), 0)) {
			t.Fatalf("Span(%v) = [%s, %s), want the point %s", full, min, max, e)
		}
	}
	other, _ := d.Hash(key(str("tenant2"), num(0), str("c")))
	if r.Contains(other) {
		t.Errorf("prefix span of \"tenant\" contains EPK %s of another tenant", other)
	}
}

// TestTruncateV1 checks V1's truncation to 100 UTF-16 code units.
func TestTruncateV1(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{a(100), a(100)},
		{a(101), a(100)},
		{strings.Repeat("鱀", 40), strings.Repeat("鱀", 40)},   // 120 bytes, 40 units: kept
		{strings.Repeat("鱀", 101), strings.Repeat("鱀", 100)}, // 3 bytes per unit
		{strings.Repeat("😀", 50), strings.Repeat("😀", 50)},   // 100 units exactly
		{strings.Repeat("😀", 51), strings.Repeat("😀", 50)},
		{a(99) + "😀", a(99) + "\uFFFD"}, // cut inside the surrogate pair
		{a(98) + "😀" + "b", a(98) + "😀"},
		{a(99) + "\xff" + "bc", a(99) + "\xff"}, // invalid byte counts as one unit
	}
	for _, tt := range tests {
		if got := truncateV1(tt.in); got != tt.want {
			t.Errorf("truncateV1(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestHashV1Truncation checks V1 EPKs of strings around the truncation
// limits: equal EPKs where the service truncates, different ones where it
// does not.
func TestHashV1Truncation(t *testing.T) {
	h := func(s string) string {
		e, err := defV1.Hash(key(str(s)))
		if err != nil {
			t.Fatalf("V1 Hash(%q) error %v", s, err)
		}
		return e.String()
	}
	tests := []struct {
		a, b  string
		equal bool
	}{
		{strings.Repeat("a", 100), strings.Repeat("a", 101), true},
		{strings.Repeat("a", 100), strings.Repeat("a", 200), true},
		{strings.Repeat("a", 99), strings.Repeat("a", 100), false},
		{strings.Repeat("鱀", 100), strings.Repeat("鱀", 100) + "x", true},
		// Same first 101 UTF-8 bytes, but the hash covers all 40 chars.
		{strings.Repeat("鱀", 40), strings.Repeat("鱀", 39) + "x", false},
	}
	for _, tt := range tests {
		if got := h(tt.a) == h(tt.b); got != tt.equal {
			t.Errorf("V1 Hash(%d bytes) == V1 Hash(%d bytes) is %v, want %v", len(tt.a), len(tt.b), got, tt.equal)
		}
	}
	// A string of 101+ UTF-8 bytes encodes exactly 101 bytes and no terminator.
	e, _ := defV1.Hash(key(str(strings.Repeat("鱀", 100))))
	if want := 8 + 101; len(e) != want {
		t.Errorf("len(V1 Hash(鱀×100)) = %d, want %d", len(e), want)
	}
}

// TestAppendNumberV1 checks the number binary encoding on its own, including
// the final 00 byte the service always writes.
func TestAppendNumberV1(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "058000"},
		{1, "05BFF0"},
		{2, "05C000"},
		{-1, "054010"},
		{-2, "054000"},
		{5, "05C014"},
		{42, "05C04580"},
	}
	for _, tt := range tests {
		if got := EPK(appendNumberV1(nil, tt.f)).String(); got != tt.want {
			t.Errorf("appendNumberV1(%v) = %s, want %s", tt.f, got, tt.want)
		}
	}
}

// TestNumberV1Order checks that the V1 number encoding preserves the order of
// doubles, which the V1 range boundaries rely on.
func TestNumberV1Order(t *testing.T) {
	vals := []float64{-1e300, -123.456, -2, -1, -0.5, -1e-300, 0, 1e-300, 0.5, 1, 2, 2.5, 3, 42, 1 << 31, 1<<32 - 1, 1e21, 1e300}
	for i := 1; i < len(vals); i++ {
		a, b := appendNumberV1(nil, vals[i-1]), appendNumberV1(nil, vals[i])
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("appendNumberV1(%v) = %X >= appendNumberV1(%v) = %X", vals[i-1], a, vals[i], b)
		}
	}
}

func TestNegativeZero(t *testing.T) {
	for _, d := range []Definition{defV1, defV2, multi(1)} {
		pos, _ := d.Hash(key(num(0)))
		neg, _ := d.Hash(key(num(negZero())))
		if !bytes.Equal(pos, neg) {
			t.Errorf("%s v%d Hash(-0) = %s, want Hash(0) = %s", d.Kind, d.Version, neg, pos)
		}
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

func TestHashErrors(t *testing.T) {
	tests := []struct {
		name string
		d    Definition
		pk   document.PartitionKey
		want error
	}{
		{"too few components", multi(2), key(str("a")), ErrInvalidKey},
		{"too many components", defV2, key(str("a"), str("b")), ErrInvalidKey},
		{"empty key", defV1, key(), ErrInvalidKey},
		{"unknown kind", defV2, key(document.PKValue{Kind: 99}), ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.d.Hash(tt.pk); !errors.Is(err, tt.want) {
				t.Errorf("Hash(%v) error = %v, want %v", tt.pk, err, tt.want)
			}
		})
	}
	spanTests := []struct {
		name string
		d    Definition
		pk   document.PartitionKey
	}{
		{"prefix on Hash", Definition{Paths: []string{"/a"}, Kind: Hash, Version: 2}, key(str("a"), str("b"))},
		{"longer than paths", multi(2), key(str("a"), str("b"), str("c"))},
		{"unknown kind", multi(2), key(document.PKValue{Kind: 7})},
	}
	for _, tt := range spanTests {
		t.Run("span/"+tt.name, func(t *testing.T) {
			if _, _, err := tt.d.Span(tt.pk); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Span(%v) error = %v, want %v", tt.pk, err, ErrInvalidKey)
			}
		})
	}
	// Definitions that are not normalized are refused with *DefinitionError.
	for _, d := range []Definition{
		{Paths: []string{"/a"}},
		{Paths: []string{"/a"}, Kind: Hash, Version: 3},
		{Paths: []string{"/a", "/b"}, Kind: MultiHash, Version: 1},
		{Paths: []string{"/a"}, Kind: "Range", Version: 2},
	} {
		if _, err := d.Hash(key(str("x"))); !isDefinitionError(err) {
			t.Errorf("%+v.Hash error = %v, want *DefinitionError", d, err)
		}
		if _, _, err := d.Span(key(str("x"))); !isDefinitionError(err) {
			t.Errorf("%+v.Span error = %v, want *DefinitionError", d, err)
		}
	}
}

func isDefinitionError(err error) bool {
	_, ok := errors.AsType[*DefinitionError](err)
	return ok
}

func TestEPKString(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  bool
	}{
		{"", "", false},
		{"FF", "FF", false},
		{"ff", "FF", false},
		{"05c1Cf33970FF80800", "05C1CF33970FF80800", false},
		{"F", "", true},
		{"0G", "", true},
		{"zz", "", true},
	}
	for _, tt := range tests {
		got, err := ParseEPK(tt.in)
		if tt.err {
			if !errors.Is(err, ErrInvalidEPK) {
				t.Errorf("ParseEPK(%q) error = %v, want %v", tt.in, err, ErrInvalidEPK)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseEPK(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if got := MaxEPK().String(); got != "FF" {
		t.Errorf("MaxEPK() = %s, want FF", got)
	}
	m := MaxEPK()
	m[0] = 0
	if MaxEPK()[0] != 0xFF {
		t.Errorf("MaxEPK() shares its backing array")
	}
}

// TestEPKOrderMatchesHex checks that byte order of EPKs equals Cosmos's
// string order of their hex forms.
func TestEPKOrderMatchesHex(t *testing.T) {
	var epks []EPK
	for _, tt := range vectors() {
		for _, d := range []Definition{defV1, defV2} {
			e, err := d.Hash(key(tt.v))
			if err != nil {
				t.Fatal(err)
			}
			epks = append(epks, e)
		}
	}
	epks = append(epks, EPK{}, MaxEPK(), EPK{0x1F, 0xFF}, EPK{0x1F})
	for _, a := range epks {
		for _, b := range epks {
			if got, want := bytes.Compare(a, b), strings.Compare(a.String(), b.String()); got != want {
				t.Errorf("bytes.Compare(%s, %s) = %d, want hex order %d", a, b, got, want)
			}
		}
	}
}
