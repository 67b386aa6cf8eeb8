// Package layers holds no code. Its test keeps the import layering that
// docs/architecture.md documents: each package of the module may import
// only packages of lower layers, and every package has a layer.
package layers
