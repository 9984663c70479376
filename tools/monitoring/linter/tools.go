//go:build tools

// The linter's command is a main package (built with `go build github.com/grafana/dashboard-linter`);
// these imports keep its packages' requirements in go.mod and go.sum.
package tools

import (
	_ "github.com/grafana/dashboard-linter/lint"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/zeitlinger/conflate"
)
