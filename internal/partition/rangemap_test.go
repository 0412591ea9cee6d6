package partition

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mustEPK parses a hex EPK or fails the test.
func mustEPK(t testing.TB, s string) EPK {
	t.Helper()
	e, err := ParseEPK(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// rng builds a range from hex bounds.
func rng(t testing.TB, id, min, max string, parents ...string) Range {
	t.Helper()
	return Range{ID: id, Min: mustEPK(t, min), Max: mustEPK(t, max), Parents: parents}
}

func ids(rs []Range) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func TestNewMapErrors(t *testing.T) {
	tests := []struct {
		name   string
		ranges []Range
	}{
		{"empty", nil},
		{"not from start", []Range{rng(t, "0", "10", "FF")}},
		{"not to end", []Range{rng(t, "0", "", "F0")}},
		{"beyond end", []Range{rng(t, "0", "", "FF00")}},
		{"gap", []Range{rng(t, "0", "", "10"), rng(t, "1", "11", "FF")}},
		{"gap by one byte", []Range{rng(t, "0", "", "10"), rng(t, "1", "1000", "FF")}},
		{"overlap", []Range{rng(t, "0", "", "20"), rng(t, "1", "10", "FF")}},
		{"same min", []Range{rng(t, "0", "", "20"), rng(t, "1", "", "FF")}},
		{"inverted", []Range{rng(t, "0", "", "20"), rng(t, "1", "30", "20"), rng(t, "2", "20", "FF")}},
		{"empty range", []Range{rng(t, "0", "", "20"), rng(t, "1", "20", "20"), rng(t, "2", "20", "FF")}},
		{"duplicate id", []Range{rng(t, "0", "", "20"), rng(t, "0", "20", "FF")}},
		{"missing id", []Range{rng(t, "", "", "FF")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := NewMap(tt.ranges); !errors.Is(err, ErrInvalidMap) {
				t.Errorf("NewMap(%v) = %v, %v; want %v", ids(tt.ranges), m, err, ErrInvalidMap)
			}
		})
	}
}

func TestNewMapSortsAndCopies(t *testing.T) {
	in := []Range{
		rng(t, "7", "3F", "FF", "2"),
		rng(t, "3", "", "1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "0"),
		rng(t, "4", "1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "3F", "0"),
	}
	m, err := NewMap(in)
	if err != nil {
		t.Fatalf("NewMap error %v", err)
	}
	if got, want := ids(m.Ranges()), []string{"3", "4", "7"}; !slices.Equal(got, want) {
		t.Errorf("NewMap(...).Ranges() ids = %v, want %v", got, want)
	}
	in[0].Max[0] = 0x00
	in[0].Parents[0] = "x"
	r, ok := m.ByID("7")
	if !ok || r.Max.String() != "FF" || r.Parents[0] != "2" {
		t.Errorf("ByID(7) = %+v, %v after the caller changed its input; want a copy", r, ok)
	}
	if m.Len() != 3 {
		t.Errorf("Len() = %d, want 3", m.Len())
	}
}

func TestLocateOverlapping(t *testing.T) {
	m, err := NewMap([]Range{
		rng(t, "1", "", "20"),
		rng(t, "5", "20", "2080"),
		rng(t, "6", "2080", "3F"),
		rng(t, "3", "3F", "FF"),
	})
	if err != nil {
		t.Fatal(err)
	}
	locate := []struct {
		e, want string
	}{
		{"", "1"},
		{"00", "1"},
		{"1FFFFF", "1"},
		{"20", "5"},
		{"2000", "5"},
		{"207F", "5"},
		{"2080", "6"},
		{"208000", "6"},
		{"3EFF", "6"},
		{"3F", "3"},
		{"FE", "3"},
		{"FEFFFF", "3"},
		{"FF", "3"}, // beyond the space: last range
		{"FFFF", "3"},
	}
	for _, tt := range locate {
		e := mustEPK(t, tt.e)
		if got := m.Locate(e); got.ID != tt.want {
			t.Errorf("Locate(%s) = %s, want %s", tt.e, got.ID, tt.want)
		} else if tt.e < "FF" && !got.Contains(e) {
			t.Errorf("Locate(%s) = %+v, which does not contain it", tt.e, got)
		}
	}
	overlapping := []struct {
		min, max string
		want     []string
	}{
		{"", "FF", []string{"1", "5", "6", "3"}},
		{"", "20", []string{"1"}},
		{"", "2000", []string{"1", "5"}},
		{"1F", "2081", []string{"1", "5", "6"}},
		{"20", "2080", []string{"5"}},
		{"2080", "208000", []string{"6"}},
		{"3E", "3F", []string{"6"}},
		{"3F", "FFFF", []string{"3"}},
		{"FF", "FFFF", nil},
		{"30", "30", nil},
		{"40", "30", nil},
		{"40", "", nil},
	}
	for _, tt := range overlapping {
		got := ids(m.Overlapping(mustEPK(t, tt.min), mustEPK(t, tt.max)))
		if len(got) == 0 {
			got = nil
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Overlapping(%q, %q) = %v, want %v", tt.min, tt.max, got, tt.want)
		}
	}
	if r, ok := m.ByID("6"); !ok || r.Min.String() != "2080" || r.Max.String() != "3F" {
		t.Errorf("ByID(6) = %+v, %v; want [2080, 3F)", r, ok)
	}
	if r, ok := m.ByID("0"); ok {
		t.Errorf("ByID(0) = %+v, true; want none", r)
	}
}

// TestOverlappingSpan checks that the point span of a key selects exactly the
// range Locate returns for its EPK, over many keys and a 7-range layout.
func TestOverlappingSpan(t *testing.T) {
	for _, d := range []Definition{defV1, defV2, multi(2)} {
		m, err := NewMap(InitialLayout(d, 7))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2000 {
			pk := key(num(float64(i)))
			if d.Kind == MultiHash {
				pk = append(pk, str("x"))
			}
			e, _ := d.Hash(pk)
			min, max, err := d.Span(pk)
			if err != nil {
				t.Fatal(err)
			}
			got := m.Overlapping(min, max)
			if want := m.Locate(e); len(got) != 1 || got[0].ID != want.ID {
				t.Fatalf("%s v%d: Overlapping(Span(%v)) = %v, want [%s]", d.Kind, d.Version, pk, ids(got), want.ID)
			}
		}
	}
}

func TestRangeContains(t *testing.T) {
	r := rng(t, "1", "20", "3F")
	tests := []struct {
		e    string
		want bool
	}{
		{"", false}, {"1F", false}, {"1FFF", false}, {"20", true}, {"2000", true}, {"3EFFFF", true}, {"3F", false}, {"3F00", false},
	}
	for _, tt := range tests {
		if got := r.Contains(mustEPK(t, tt.e)); got != tt.want {
			t.Errorf("[20, 3F).Contains(%q) = %v, want %v", tt.e, got, tt.want)
		}
	}
	whole := Range{ID: "0", Min: EPK{}, Max: MaxEPK()}
	if !whole.Contains(EPK{}) || whole.Contains(MaxEPK()) {
		t.Errorf(`["", FF).Contains wrong at the ends`)
	}
}

func TestInitialLayoutIsMap(t *testing.T) {
	for _, d := range []Definition{defV1, defV2, multi(3)} {
		for n := -1; n <= 16; n++ {
			layout := InitialLayout(d, n)
			m, err := NewMap(layout)
			if err != nil {
				t.Fatalf("NewMap(InitialLayout(%s v%d, %d)) error %v", d.Kind, d.Version, n, err)
			}
			want := max(n, 1)
			if m.Len() != want {
				t.Errorf("len(InitialLayout(%s v%d, %d)) = %d, want %d", d.Kind, d.Version, n, m.Len(), want)
			}
			for i, r := range m.Ranges() {
				if r.ID != ids(layout)[i] || len(r.Parents) != 0 {
					t.Errorf("InitialLayout(%d)[%d] = %+v, want id %d and no parents", n, i, r, i)
				}
			}
		}
	}
	got := InitialLayout(defV2, 2)
	want := []Range{
		{ID: "0", Min: EPK{}, Max: mustEPK(t, "1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF")},
		{ID: "1", Min: mustEPK(t, "1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"), Max: MaxEPK()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("InitialLayout(V2, 2) mismatch (-want +got):\n%s", diff)
	}
}
