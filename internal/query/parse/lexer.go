package parse

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// SyntaxError reports malformed query text. Msg is complete and client-safe, e.g.
// `unexpected "FROM" at line 1, column 8`; Pos is the byte offset, Line and Col count from 1.
type SyntaxError struct {
	Pos, Line, Col int
	Msg            string
}

// Error returns e.Msg.
func (e *SyntaxError) Error() string { return e.Msg }

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokString
	tokParam
	tokOp
)

type token struct {
	kind tokKind
	text string  // source text: identifier, operator, number, parameter (with @), quoted string
	str  string  // decoded value of a string token
	num  float64 // value of a number token
	pos  Position
}

// lexer splits query text into tokens. It tracks lines so that every token knows its
// line and column.
type lexer struct {
	src       string
	off       int
	line      int
	lineStart int
	// col is the column at byte offset colOff of the current line: positions are computed
	// incrementally, so a long single-line query costs linear time.
	colOff, col int
	toks        []token
}

func errorAt(p Position, format string, args ...any) *SyntaxError {
	msg := fmt.Sprintf(format, args...)
	return &SyntaxError{Pos: p.Offset, Line: p.Line, Col: p.Col,
		Msg: fmt.Sprintf("%s at line %d, column %d", msg, p.Line, p.Col)}
}

func (l *lexer) position(off int) Position {
	if off < l.colOff || l.colOff < l.lineStart {
		l.colOff, l.col = l.lineStart, 1
	}
	l.col += utf8.RuneCountInString(l.src[l.colOff:off])
	l.colOff = off
	return Position{Offset: off, Line: l.line, Col: l.col}
}

func (l *lexer) newline(next int) {
	l.line++
	l.lineStart = next
	l.colOff, l.col = next, 1
}

// threeCharOps and twoCharOps are tried before single characters (longest match).
var threeCharOps = [...]string{">>>"}
var twoCharOps = [...]string{"!=", "<>", "<=", ">=", "<<", ">>", "||", "??"}

const singleCharOps = "()[]{},.:?=<>+-*/%&|^~"

func lex(src string) ([]token, error) {
	l := &lexer{src: src, line: 1, col: 1, toks: make([]token, 0, len(src)/4+2)}
	for {
		l.skipSpace()
		if l.off >= len(src) {
			l.toks = append(l.toks, token{kind: tokEOF, pos: l.position(l.off)})
			return l.toks, nil
		}
		if err := l.next(); err != nil {
			return nil, err
		}
	}
}

func (l *lexer) skipSpace() {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == '\n':
			l.off++
			l.newline(l.off)
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			l.off++
		case c == '-' && l.off+1 < len(l.src) && l.src[l.off+1] == '-':
			// A "--" comment runs to the end of the line.
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.off++
			}
		default:
			return
		}
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

// operandEnd reports whether the last token can end an operand, in which case a following
// ".5" is a property access attempt rather than a number.
func (l *lexer) operandEnd() bool {
	if len(l.toks) == 0 {
		return false
	}
	t := l.toks[len(l.toks)-1]
	switch t.kind {
	case tokIdent:
		// A keyword (SELECT, AND, BETWEEN, NOT, ...) is followed by an operand, so ".5" after
		// it is a number (a query hunt: "c.n BETWEEN .5 AND 1" was refused); a keyword after
		// '.' is a property name, and true, false, null and undefined are operands.
		if !IsReserved(t.text) || isLiteralWord(t.text) {
			return true
		}
		return len(l.toks) > 1 && l.toks[len(l.toks)-2].kind == tokOp && l.toks[len(l.toks)-2].text == "."
	case tokNumber, tokString, tokParam:
		return true
	case tokOp:
		return t.text == ")" || t.text == "]" || t.text == "}"
	}
	return false
}

func (l *lexer) next() error {
	start := l.off
	pos := l.position(start)
	c := l.src[start]
	switch {
	case isIdentStart(c):
		end := start + 1
		for end < len(l.src) && isIdentChar(l.src[end]) {
			end++
		}
		l.off = end
		l.toks = append(l.toks, token{kind: tokIdent, text: l.src[start:end], pos: pos})
		return nil
	case c == '@':
		end := start + 1
		for end < len(l.src) && isIdentChar(l.src[end]) {
			end++
		}
		if end == start+1 {
			return errorAt(pos, "invalid parameter name")
		}
		l.off = end
		l.toks = append(l.toks, token{kind: tokParam, text: l.src[start:end], pos: pos})
		return nil
	case isDigit(c) || (c == '.' && start+1 < len(l.src) && isDigit(l.src[start+1]) && !l.operandEnd()):
		return l.number(pos)
	case c == '"' || c == '\'':
		return l.str(pos, c)
	}
	for _, op := range threeCharOps {
		if strings.HasPrefix(l.src[start:], op) {
			l.off += len(op)
			l.toks = append(l.toks, token{kind: tokOp, text: op, pos: pos})
			return nil
		}
	}
	for _, op := range twoCharOps {
		if strings.HasPrefix(l.src[start:], op) {
			l.off += len(op)
			l.toks = append(l.toks, token{kind: tokOp, text: op, pos: pos})
			return nil
		}
	}
	if strings.IndexByte(singleCharOps, c) >= 0 {
		l.off++
		l.toks = append(l.toks, token{kind: tokOp, text: l.src[start : start+1], pos: pos})
		return nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[start:])
	return errorAt(pos, "invalid character %q", r)
}

// isLiteralWord reports whether a reserved word is one of the literals true, false, null and
// undefined.
func isLiteralWord(w string) bool {
	return strings.EqualFold(w, "true") || strings.EqualFold(w, "false") || strings.EqualFold(w, "null") || strings.EqualFold(w, "undefined")
}

// number scans DIGIT+ ['.' DIGIT*] [e [+-] DIGIT+], '.' DIGIT+ [exponent], or a hexadecimal
// literal, 0x HEXDIGIT+ (Cosmos DB's hexadecimal_literal).
func (l *lexer) number(pos Position) error {
	s := l.src
	i := l.off
	if s[i] == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') {
		return l.hexNumber(pos)
	}
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	if i < len(s) && isIdentChar(s[i]) {
		return errorAt(pos, "invalid number %q", s[l.off:i+1])
	}
	text := s[l.off:i]
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return errorAt(pos, "number %s out of range", text)
	}
	l.off = i
	l.toks = append(l.toks, token{kind: tokNumber, text: text, num: f, pos: pos})
	return nil
}

// hexNumber scans 0x HEXDIGIT+, at most 16 digits (an unsigned 64-bit value, as a number).
// Its token text is the value in decimal, so that an integer past 2^53 keeps its digits as a
// decimal literal's does.
func (l *lexer) hexNumber(pos Position) error {
	s := l.src
	i := l.off + 2
	for i < len(s) && isHexDigit(s[i]) {
		i++
	}
	if i == l.off+2 || (i < len(s) && isIdentChar(s[i])) {
		end := i + 1
		if end > len(s) {
			end = len(s)
		}
		return errorAt(pos, "invalid number %q", s[l.off:end])
	}
	u, err := strconv.ParseUint(s[l.off+2:i], 16, 64)
	if err != nil {
		return errorAt(pos, "number %s out of range", s[l.off:i])
	}
	l.off = i
	l.toks = append(l.toks, token{kind: tokNumber, text: strconv.FormatUint(u, 10), num: float64(u), pos: pos})
	return nil
}

func isHexDigit(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// str scans a string literal quoted with q. Escapes are JSON's plus \' ; \u escapes may form
// UTF-16 surrogate pairs. A newline inside the literal is allowed and counted.
func (l *lexer) str(pos Position, q byte) error {
	s := l.src
	i := l.off + 1
	var b strings.Builder
	for {
		if i >= len(s) {
			return errorAt(pos, "unterminated string")
		}
		c := s[i]
		switch {
		case c == q:
			i++
			l.toks = append(l.toks, token{kind: tokString, text: s[l.off:i], str: b.String(), pos: pos})
			l.off = i
			return nil
		case c == '\\':
			if i+1 >= len(s) {
				return errorAt(pos, "unterminated string")
			}
			e := s[i+1]
			switch e {
			case '"', '\'', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					return errorAt(l.position(i), "invalid escape sequence")
				}
				adv := 6
				if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+6:], `\u`) {
					if r2, ok := hex4(s, i+8); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r, adv = d, 12
						}
					}
				}
				b.WriteRune(r) // a lone surrogate becomes U+FFFD
				i += adv
				continue
			default:
				return errorAt(l.position(i), "invalid escape sequence %q", s[i:i+2])
			}
			i += 2
		default:
			if c == '\n' {
				l.newline(i + 1)
			}
			b.WriteByte(c)
			i++
		}
	}
}

// hex4 decodes the four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i:i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}
