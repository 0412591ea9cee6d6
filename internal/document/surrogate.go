package document

import "bytes"

// FixLoneSurrogates returns b with every JSON escape of a lone UTF-16
// surrogate (\ud800 with no \udc00–\udfff after it, or a low surrogate with
// no high one before it) replaced by \ufffd, the replacement character,
// which is what the decoders of ids and partition keys here (and Go's
// encoding/json) make of it. It returns b itself when there is none (the
// common case, found without copying); otherwise a copy, of the same
// length. Request bodies pass through it (api) as item bodies do
// (ParseItem), so that every reader of a stored item — fastjson, which
// keeps a lone surrogate's escape as six characters of text, among them —
// sees one string: a bug hunt found an item whose id a query returned as
// "ls\\ud800" while its point read needed "ls\ufffd".
//
// b need not be valid JSON: only backslash escapes are looked at, pairs of
// backslashes skipped, as a JSON scanner reads them.
func FixLoneSurrogates(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u`)) {
		return b
	}
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // \\, \" and the like: the next byte is not an escape's start
			continue
		}
		r, ok := hexRun(b, i+2, 4)
		if !ok || r < 0xd800 || r > 0xdfff {
			i += 5
			continue
		}
		if r <= 0xdbff && i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			if lo, ok := hexRun(b, i+8, 4); ok && lo >= 0xdc00 && lo <= 0xdfff {
				i += 11 // a pair
				continue
			}
		}
		if out == nil {
			out = bytes.Clone(b)
		}
		copy(out[i:], `\ufffd`)
		i += 5
	}
	if out == nil {
		return b
	}
	return out
}
