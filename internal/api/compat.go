package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/partitadb/partita/internal/status"
)

// emulatorPathCheck mimics how the Cosmos DB emulator's gateway reads a
// request path, for clients tested against it (Config.EmulatorIDQuirks).
// The gateway decodes the whole path before splitting it, treats '\' as a
// separator, cuts at '#', decodes resource ids a second time and trims
// trailing whitespace; a resource id that does not survive that unchanged no
// longer matches the link the client signed, so the gateway answers 401.
// Control characters in a path get 400.
func emulatorPathCheck(rawPath string) error {
	for _, raw := range strings.Split(strings.Trim(rawPath, "/"), "/") {
		seg, err := url.PathUnescape(raw)
		if err != nil {
			return nil // the regular path checks report this
		}
		if strings.ContainsFunc(seg, unicode.IsControl) {
			return status.New(http.StatusBadRequest, "the request URL contains control characters")
		}
		twice, err := url.PathUnescape(seg)
		if strings.ContainsAny(seg, `/\#`) || err != nil || twice != seg || strings.TrimRightFunc(seg, unicode.IsSpace) != seg {
			return status.New(http.StatusUnauthorized, "The input authorization token can't serve the request. "+
				"The resource id in the request URL "+strconv.Quote(seg)+" cannot be addressed through the gateway.")
		}
	}
	return nil
}
