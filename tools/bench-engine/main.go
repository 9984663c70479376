// Runs the engine benchmark cases of merge/benches/patch.rs through apimachinery's strategic
// merge patch (the Go library kubectl 1.33 uses), on the documents that
// `cargo run -p applyset-merge --example export_bench_cases -- DIR` writes, and prints one line
// per case: "<name>\t<ns/op>\t<allocated bytes/op>". See scripts/bench-engine.
//
// Go's API takes and returns JSON text, so its figures include decoding the inputs and
// encoding the outputs; the Rust side measures both that and the computation alone.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func read(dir, name string) []byte {
	data, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return data
}

func must(data []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return data
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bench-engine DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	deployMeta, err := strategicpatch.NewPatchMetaFromStruct(appsv1.Deployment{})
	if err != nil {
		panic(err)
	}
	configMapMeta, err := strategicpatch.NewPatchMetaFromStruct(corev1.ConfigMap{})
	if err != nil {
		panic(err)
	}
	manifest, live, newImage := read(dir, "deployment-manifest"), read(dir, "deployment-live"), read(dir, "deployment-new-image")
	big, bigChanged := read(dir, "configmap-big"), read(dir, "configmap-big-changed")
	envOld, envNew, envPatch := read(dir, "env-old"), read(dir, "env-new"), read(dir, "env-patch")

	cases := []struct {
		name string
		run  func()
	}{
		{"deployment three-way, unchanged", func() {
			must(strategicpatch.CreateThreeWayMergePatch(manifest, manifest, live, deployMeta, true))
		}},
		{"deployment three-way + apply, image change", func() {
			patch := must(strategicpatch.CreateThreeWayMergePatch(manifest, newImage, live, deployMeta, true))
			must(strategicpatch.StrategicMergePatch(live, patch, appsv1.Deployment{}))
		}},
		{"configmap ~500KB three-way + apply, one key changed", func() {
			patch := must(strategicpatch.CreateThreeWayMergePatch(big, bigChanged, big, configMapMeta, true))
			must(strategicpatch.StrategicMergePatch(big, patch, corev1.ConfigMap{}))
		}},
		{"16k env entries/three-way diff", func() {
			must(strategicpatch.CreateThreeWayMergePatch(envOld, envNew, envOld, deployMeta, true))
		}},
		{"16k env entries/apply", func() {
			must(strategicpatch.StrategicMergePatch(envOld, envPatch, appsv1.Deployment{}))
		}},
		{"16k env entries/diff + apply end to end", func() {
			patch := must(strategicpatch.CreateThreeWayMergePatch(envOld, envNew, envOld, deployMeta, true))
			must(strategicpatch.StrategicMergePatch(envOld, patch, appsv1.Deployment{}))
		}},
	}
	for _, c := range cases {
		result := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.run()
			}
		})
		fmt.Printf("%s\t%d\t%d\n", c.name, result.NsPerOp(), result.AllocedBytesPerOp())
	}
}
