package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/partitadb/partita/internal/config"
)

// TestCertAfterCrash: the empty cert.pem that a crash during an older
// release's first start left (it wrote the file in place) is made again,
// where every later start failed ("failed to find any PEM data"; a bug
// hunt); and a certificate made once is kept across starts.
func TestCertAfterCrash(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tls"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls", "cert.pem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, first, err := loadOrCreateCert(config.Server{}, dir)
	if err != nil {
		t.Fatalf("start after a crash left an empty cert.pem: %v", err)
	}
	_, again, err := loadOrCreateCert(config.Server{}, dir)
	if err != nil || string(again) != string(first) {
		t.Errorf("second start: %v, certificate kept %v", err, string(again) == string(first))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "tls", "*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
