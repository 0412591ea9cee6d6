// Package status owns *Error, the one error type that knows HTTP: a Cosmos DB
// status code, substatus and client-safe message. It is a leaf that any layer
// above store may import.
package status
