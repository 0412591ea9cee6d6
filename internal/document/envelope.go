package document

import (
	"errors"
	"fmt"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// UnmarshalEnvelope decodes a request's JSON envelope — the members a
// request names itself by, such as a batch's operations or a patch
// request — into v, reading member names exactly as Cosmos DB's wire
// format spells them and refusing a name given twice in any object, at
// any depth. encoding/json matches names case-insensitively and keeps the
// last of two: {"operationType":"Read","OperationType":"Delete"} deleted,
// and a patch whose "condition" was false ran under its "Condition" (a bug
// hunt), where another reader of the same body keeps the first or the
// exact name. Members of other names are ignored, as before; invalid UTF-8
// and lone surrogates decode as encoding/json decodes them (U+FFFD in a
// string, kept in a json.RawMessage). The error is an *InvalidError
// naming the member (a JSON Pointer).
//
// It uses the encoding/json/v2 prototype (github.com/go-json-experiment/json),
// whose defaults are exactly these rules.
func UnmarshalEnvelope(b []byte, v any) error {
	err := jsonv2.Unmarshal(b, v, jsontext.AllowInvalidUTF8(true))
	if err == nil {
		return nil
	}
	if se, ok := errors.AsType[*jsonv2.SemanticError](err); ok && se.JSONKind != 0 {
		// Not its text, which names Go types.
		kind := map[jsontext.Kind]string{'n': "null", 'f': "false", 't': "true", '"': "a string", '0': "a number", '{': "an object", '[': "an array"}[se.JSONKind]
		if se.JSONPointer == "" {
			return &InvalidError{Msg: "the body has the wrong type (" + kind + ")"}
		}
		return &InvalidError{Msg: fmt.Sprintf("member %q has the wrong type (%s)", se.JSONPointer, kind)}
	}
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok && errors.Is(se.Err, jsontext.ErrDuplicateName) {
		msg := fmt.Sprintf("duplicate property name %q", se.JSONPointer.LastToken())
		if in := se.JSONPointer.Parent(); in != "" {
			msg += fmt.Sprintf(" in %q", in)
		}
		return &InvalidError{Msg: msg}
	}
	// An invalid character's, "jsontext: invalid character ',' …".
	return &InvalidError{Msg: strings.TrimPrefix(strings.TrimPrefix(err.Error(), "json: "), "jsontext: ")}
}
