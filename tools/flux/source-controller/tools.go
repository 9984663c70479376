//go:build tools

// Keeps source-controller's main package in go.mod and go.sum; scripts/build-flux builds it.
package tools

import _ "github.com/fluxcd/source-controller"
