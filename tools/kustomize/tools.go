//go:build tools

package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
