package api

import (
	"net/http"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/status"
)

// Requests authorised by a resource token (the _token of a permission).
//
// What such a request may do follows from its route, as for every other
// principal (handle): tokenRoutes lists the routes a token may use at all,
// and what of the route's resource the token's grant must cover. Every other
// route (databases, containers' definitions, offers, users, permissions,
// scripts' definitions, Partita's own) refuses tokens: a resource token never
// changes metadata. Within a grant, Read allows the reads of these routes and
// All their writes too (writes).
//
// The grant's scope is Cosmos DB's: a permission applies to a resource when
// its link is a prefix of the resource's link (the container, or one item of
// it) and its resourcePartitionKey, if any, is the request's partition key.
// Besides, any token of a container may read the container's own definition
// and partition key ranges (and ask for a query plan), which the SDKs read
// to route requests and which hold no items.

// tokenUse is what of a route's resource a resource token must cover.
type tokenUse int

const (
	// tokenAccount: the database account (GET /), which every SDK reads
	// first; any valid token.
	tokenAccount tokenUse = iota + 1
	// tokenContainer: a container's definition or partition key ranges; any
	// grant within the container.
	tokenContainer
	// tokenItems: a container's items (queries, feeds, creates, batches,
	// stored procedures, partition key delete): a grant on the whole
	// container, whose partition key, if it has one, the request's
	// partition key header must be.
	tokenItems
	// tokenItem: one item (…/docs/{id}): a grant on the container as for
	// tokenItems, or on that item.
	tokenItem
)

// tokenRoutes are the routes a resource token may use (their patterns, as
// registered), with what the token must cover.
var tokenRoutes = map[string]tokenUse{
	"GET /{$}":                                                  tokenAccount,
	"GET /dbs/{db}/colls/{coll}":                                tokenContainer,
	"GET /dbs/{db}/colls/{coll}/pkranges":                       tokenContainer,
	"POST /dbs/{db}/colls/{coll}/docs":                          tokenItems,
	"GET /dbs/{db}/colls/{coll}/docs":                           tokenItems,
	"GET /dbs/{db}/colls/{coll}/docs/{id}":                      tokenItem,
	"PUT /dbs/{db}/colls/{coll}/docs/{id}":                      tokenItem,
	"PATCH /dbs/{db}/colls/{coll}/docs/{id}":                    tokenItem,
	"DELETE /dbs/{db}/colls/{coll}/docs/{id}":                   tokenItem,
	"POST /dbs/{db}/colls/{coll}/sprocs/{id}":                   tokenItems,
	"POST /dbs/{db}/colls/{coll}/operations/partitionkeydelete": tokenItems,
}

// insufficient is Cosmos DB's 403 for a resource token that does not cover
// the request, with why.
func insufficient(why string) *status.Error {
	return status.New(http.StatusForbidden, "Insufficient permissions provided in the authorization header for the corresponding request. "+
		"Please retry with another authorization header. "+why)
}

// grantScope is the link a grant covers, for messages.
func grantScope(g *auth.Grant) string {
	s := "dbs/" + g.DB + "/colls/" + g.Container
	if g.Item != "" {
		s += "/docs/" + g.Item
	}
	if g.PK != "" {
		s += " (partition key " + g.PK + ")"
	}
	return s
}

// checkGrant returns nil when grant g covers request r of the route with
// pattern pattern, and a 403 saying why not otherwise.
func (h *Handler) checkGrant(g *auth.Grant, pattern string, r *http.Request) error {
	use, ok := tokenRoutes[pattern]
	if !ok {
		return insufficient("A resource token grants access to the items of one container (" + grantScope(g) +
			"); it cannot be used for " + r.Method + " " + r.URL.Path + ".")
	}
	if use == tokenAccount {
		return nil
	}
	db, coll := r.PathValue("db"), r.PathValue("coll")
	if db != g.DB || coll != g.Container {
		return insufficient("The resource token grants access to " + grantScope(g) + ", not to dbs/" + db + "/colls/" + coll + ".")
	}
	if rid, err := h.eng.ContainerRID(db, coll); err == nil && rid != g.ContainerRID {
		return insufficient("The resource token was issued for an earlier container named dbs/" + db + "/colls/" + coll +
			", which was deleted since.")
	}
	// (A missing container is the handler's to answer: 404.)
	if use == tokenContainer || planRequest(pattern, r) {
		return nil
	}
	if g.Item != "" && (use != tokenItem || !h.grantedItem(g, r)) {
		return insufficient("The resource token grants access to the item " + grantScope(g) + " only.")
	}
	if g.PK == "" || (pattern == bulkRoute && isBulk(r)) {
		// A bulk request names a partition key per operation: the batch
		// handler checks each (checkOpsPK). Only on the route that serves
		// bulk requests: the batch header on a partition key delete or a
		// stored procedure's execution skipped every check there, and a
		// token of one partition key deleted another's items (a bug hunt).
		return nil
	}
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	return checkPK(g, pk)
}

// grantedItem reports whether the item request r addresses is the one
// grant g names. Either may name it by its id or by its _rid: the SDKs'
// samples give a permission the item's _self and then read it by id, and
// Python's SDK reads an item by its _self. Like is compared with like: when
// the two forms differ, the _rid is resolved to its item's id in the
// request's logical partition (read as the request's own read would be),
// and an item not found is not the one granted. It compared the two
// strings before, and refused both mixes (403, a bug hunt with the Python
// SDK); an id that looks like a _rid is an id (a review: an item whose id
// was another item's _rid reached that item).
func (h *Handler) grantedItem(g *auth.Grant, r *http.Request) bool {
	id := r.PathValue("id")
	byRID, _ := r.Context().Value(ridItemKey{}).(bool)
	if byRID == g.ItemRID {
		return id == g.Item
	}
	rid, want := id, g.Item // the request by _rid, the grant by id
	if g.ItemRID {
		rid, want = g.Item, id
	}
	pk, err := partitionKey(r)
	if err != nil {
		return false
	}
	got, err := h.eng.ItemIDByRID(r.Context(), r.PathValue("db"), r.PathValue("coll"), pk, rid, false)
	return err == nil && got == want
}

// planRequest reports whether r, of the route with pattern pattern, asks
// for a query plan, which reads no item: only POST …/docs serves one
// (queryItemsOrPlan). The header on any other route of tokenItems — the
// read feed and change feed, a stored procedure, a partition key delete —
// changes nothing there, so it must not lift the token's partition key or
// item scope either (it did: a token scoped to one partition key read the
// whole container's feed, ran procedures in and deleted other partitions).
func planRequest(pattern string, r *http.Request) bool {
	return pattern == "POST /dbs/{db}/colls/{coll}/docs" && isTrue(r, hdrIsPlan)
}

// isBulk reports whether a POST …/docs is a bulk request, deciding as
// handlePost and postItems dispatch it: not a query or a query plan
// request (whatever else it says), a batch, not atomic.
// bulkRoute is the route bulk requests are served on.
const bulkRoute = "POST /dbs/{db}/colls/{coll}/docs"

func isBulk(r *http.Request) bool {
	return r.Method == http.MethodPost && !isQuery(r) && !isTrue(r, hdrIsPlan) &&
		isTrue(r, hdrIsBatch) && !isTrue(r, hdrBatchAtomic)
}

// checkPK returns nil when grant g covers partition key pk, and a 403
// otherwise.
func checkPK(g *auth.Grant, pk document.PartitionKey) error {
	if g.PK == "" {
		return nil
	}
	if pk == nil {
		return insufficient("The resource token grants access to partition key " + g.PK +
			" only: send it in the " + hdrPartitionKey + " header.")
	}
	want, err := document.ParsePKHeader(g.PK)
	if err != nil || !want.Equal(pk) {
		return insufficient("The resource token grants access to partition key " + g.PK + ", not to " + pk.String() + ".")
	}
	return nil
}

// checkOpsPK returns a 403 unless the request's resource token, if it has
// one, covers the partition key of every operation of a bulk request.
func checkOpsPK(r *http.Request, pks []document.PartitionKey) error {
	g := grantFrom(r.Context())
	if g == nil {
		return nil
	}
	for _, pk := range pks {
		if pk == nil && g.PK != "" {
			return insufficient("The resource token grants access to partition key " + g.PK +
				" only: every operation of a bulk request must name it.")
		}
		if err := checkPK(g, pk); err != nil {
			return err
		}
	}
	return nil
}
