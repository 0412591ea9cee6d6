// Package document owns Partita's view of a stored JSON item: validation of
// item bodies (object, id rules), partition key values (parsing the
// x-ms-documentdb-partitionkey header, extracting the value at the container's
// partition key paths, a canonical binary encoding) and the system properties
// (_rid, _self, _etag, _ts, _attachments) the server adds to every item,
// and how a request's JSON envelope (a batch's operations, a patch request)
// is read: names exactly, none twice (UnmarshalEnvelope).
//
// It is a leaf: it imports no other internal package, and any layer may use it.
package document
