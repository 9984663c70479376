// Command k8s-control-plane is one binary holding the control-plane servers,
// so the (long) build links the shared Kubernetes code only once.
//
// Usage: k8s-control-plane etcd|kube-apiserver|kube-controller-manager|kube-scheduler [flags...]
package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	server, args := os.Args[1], os.Args[2:]
	switch server {
	case "etcd":
		// etcdmain.Main expects a full argv, program name first.
		etcdmain.Main(append([]string{"etcd"}, args...))
	case "kube-apiserver":
		command := apiserver.NewAPIServerCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "kube-controller-manager":
		command := controllermanager.NewControllerManagerCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "kube-scheduler":
		command := scheduler.NewSchedulerCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: k8s-control-plane etcd|kube-apiserver|kube-controller-manager|kube-scheduler [flags...]")
	os.Exit(2)
}
