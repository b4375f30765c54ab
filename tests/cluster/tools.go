//go:build tools

// Package cluster pins the Kubernetes control-plane commands that tests/cluster builds, and the
// kubelet and kube-proxy of `testcluster up --node`, so `go mod tidy` keeps their dependencies
// in go.mod and go.sum.
package cluster

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
	_ "k8s.io/kubectl/pkg/cmd"
)
