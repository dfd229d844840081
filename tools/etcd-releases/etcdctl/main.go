// etcdctl of one pinned release, built from its Go module
// (go.etcd.io/etcd/etcdctl/v3). Only the v3 API: ETCDCTL_API may be unset
// or 3 (3.5's own main also offers the removed v2 API; 3.6 dropped it).
package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/etcdctl/v3/ctlv3"
)

func main() {
	api := os.Getenv("ETCDCTL_API")
	// As upstream does: unset it so that flag parsing from ETCDCTL_*
	// variables does not reject it.
	os.Unsetenv("ETCDCTL_API")
	if api != "" && api != "3" {
		fmt.Fprintf(os.Stderr, "unsupported API version: %s\n", api)
		os.Exit(1)
	}
	ctlv3.MustStart()
}
