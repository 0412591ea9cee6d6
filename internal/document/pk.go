package document

// PKKind is the JSON type of one partition key component.
type PKKind uint8

// The kinds of partition key component. Undefined is the "none" value of an
// item that has no property at the partition key path; it differs from Null.
const (
	Undefined PKKind = iota
	Null
	Bool
	Number
	String
)

// PKValue is one component of a partition key value. Exactly one of Bool,
// Number or String is meaningful, chosen by Kind. Numbers are IEEE-754 doubles,
// as every SDK decodes them.
type PKValue struct {
	Kind   PKKind
	Bool   bool
	Number float64
	String string
}

// PartitionKey is a partition key value: one component per path of the
// container's partition key definition (one for Hash, up to three for
// MultiHash). A shorter slice is a prefix of a hierarchical key.
type PartitionKey []PKValue
