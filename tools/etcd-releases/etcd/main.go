// The etcd server of one pinned release, built from its Go module
// (go.etcd.io/etcd/server/v3) exactly as the release's own server/main.go
// does. tools/etcd-releases/provide.sh writes the go.mod per release.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
