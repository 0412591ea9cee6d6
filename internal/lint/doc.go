// Package lint holds tests that enforce the project's structure: the layer
// picture of DESIGN.md, the project's design notes kept beside the
// repository (which internal package may import which), Pebble imported by
// package store only, and no grab-bag package names. It has no
// code of its own.
package lint
