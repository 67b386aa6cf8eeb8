// Package schema holds the JSON Schema (draft 2020-12) of floodgate's
// configuration file, for editors: with the YAML language server, a first
// line such as (the path relative to the configuration file)
//
//	# yaml-language-server: $schema=../schema/floodgate.schema.json
//
// gives completion, descriptions and checks while typing. The schema
// accepts a "${VAR}" string wherever a value is constrained, since
// variables are expanded when the file is loaded.
//
// The schema checks the shape of a file; `floodgate validate` checks
// everything (package config). Tests keep the two in step: every field of
// config.Config is in the schema and every property of the schema is a
// field.
package schema

import _ "embed"

// JSON is the schema, floodgate.schema.json.
//
//go:embed floodgate.schema.json
var JSON []byte
