//go:build tools

package tools

import (
	_ "filippo.io/age/cmd/age"
	_ "filippo.io/age/cmd/age-keygen"
	_ "github.com/getsops/sops/v3/cmd/sops"
)
