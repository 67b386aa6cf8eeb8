// Package demo provides the two stand-in upstreams behind `floodgate demo`
// and the gateway's integration tests, so that both run with no internet:
//
//   - MediaAPI, a tiny in-memory API shaped like the Openverse API: an
//     OAuth2 client-credentials token endpoint, and search, single-record
//     and related-records answers over a fixed catalogue of 12 images and
//     8 audio records with generated SVG thumbnails (data: URLs).
//   - Frontend, the "web frontend": one accessible search page whose
//     script calls the gateway's public /api/search/… route and shows the
//     gateway's 429 answer (problem+json detail and Retry-After) to the
//     person searching.
//
// Every JSON answer of MediaAPI carries a "_received" object (see Received)
// describing the request as it arrived, so a test can assert what the
// gateway forwarded: the path, the query string, whether a valid bearer
// token came with it, and whether any cookie did.
//
// Nothing here is meant for production: the catalogue is fixed, tokens live
// in memory, and the handlers trust their caller to be the gateway.
package demo
