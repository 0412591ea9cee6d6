package engine

import (
	"strings"
	"testing"
)

// TestEscapedTextStoredAsUTF8: an item whose non-ASCII text is written as
// \u escapes (the Python SDK's json.dumps) is stored and measured as UTF-8:
// 400,000 CJK characters, 1.2 MB as UTF-8 and 2.4 MB escaped, fit the 2 MB
// limit (they were refused as 2.4 MB), and read back as the same text.
func TestEscapedTextStoredAsUTF8(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	body := `{"id":"cjk","pk":"p0","t":"` + strings.Repeat(`\u65e5`, 400000) + `"}`
	res, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkOf(0), Body: []byte(body)})
	if err != nil {
		t.Fatalf("create of 400,000 escaped CJK characters: %v", err)
	}
	if len(res.Body) > 1300000 || !strings.Contains(string(res.Body), strings.Repeat("日", 100)) {
		t.Errorf("stored body of %d bytes: want the text as UTF-8 (about 1.2 MB)", len(res.Body))
	}
	got, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "cjk"}, pkOf(0), "")
	if err != nil || !strings.Contains(string(got.Body), `"t":"`+strings.Repeat("日", 400000)+`"`) {
		t.Fatalf("read back: %v", err)
	}
	// A patch's value escaped so is stored so too.
	if _, err := e.PatchItem(ctx, ItemRef{DB: "db", Container: "k", ID: "cjk"}, pkOf(0), []byte(`{"operations":[{"op":"set","path":"/u","value":"caf\u00e9"}]}`), ""); err != nil {
		t.Fatal(err)
	}
	got, err = e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "cjk"}, pkOf(0), "")
	if err != nil || !strings.Contains(string(got.Body), `"u":"café"`) {
		t.Errorf("patched value: %v", err)
	}
}
