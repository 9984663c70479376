//go:build tools

// Keeps kustomize-controller's main package in go.mod and go.sum; scripts/build-flux builds it.
package tools

import _ "github.com/fluxcd/kustomize-controller"
