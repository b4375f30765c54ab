// Command coredns is CoreDNS with only the plugins the test node's cluster DNS uses (kubernetes,
// bind, ready, errors, log, cache), so it builds in a fraction of the time of CoreDNS with all
// of its plugins. tests/cluster/build.sh --node builds it; testcluster up --node runs it.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
