// Package examples embeds the example configurations, so that the
// floodgate binary can run them from anywhere (`floodgate demo`). The
// files themselves are the documentation: read them.
package examples

import _ "embed"

// Openverse is examples/openverse.yaml.
//
//go:embed openverse.yaml
var Openverse []byte

// MaveDB is examples/mavedb.yaml.
//
//go:embed mavedb.yaml
var MaveDB []byte
