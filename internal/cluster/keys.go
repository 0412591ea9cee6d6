package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keysPrefix is where each member records a fingerprint of the account
// keys it runs with, under its node id, outside the catalog's prefix.
const keysPrefix = "/partita/account-keys/"

// KeysFingerprint is a fingerprint of the account's master and read-only
// keys, keyed by the cluster secret (NodeConfig.KeysFingerprint): it tells
// whether two members run with the same keys without storing anything
// that helps to guess them.
func KeysFingerprint(secret []byte, master, readOnly string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("partita account keys v1\x00"))
	m.Write([]byte(master))
	m.Write([]byte{0})
	m.Write([]byte(readOnly))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// checkKeys records fp as this member's account keys' fingerprint and logs
// an error naming the members whose recorded fingerprints differ. Every
// member authenticates the requests it serves itself, forwarded ones
// included, so a member started with another --key accepted its clients'
// writes to the partitions it led and answered 401 for the rest, which its
// peers served (a bug hunt); nothing said why. Not refused: keys are
// rotated by restarting the members one by one.
func checkKeys(ctx context.Context, cli *clientv3.Client, self uint64, fp string, lg *slog.Logger) error {
	var resp *clientv3.TxnResponse
	if err := retryEtcd(ctx, func() error {
		var err error
		resp, err = cli.Txn(ctx).Then(clientv3.OpPut(keysPrefix+nodeHex(self), fp),
			clientv3.OpGet(keysPrefix, clientv3.WithPrefix())).Commit()
		return err
	}); err != nil {
		return err
	}
	var differ []string
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if id := strings.TrimPrefix(string(kv.Key), keysPrefix); id != nodeHex(self) && string(kv.Value) != fp {
			differ = append(differ, id)
		}
	}
	if len(differ) > 0 {
		lg.Error("this node's account keys (--key, --read-only-key) differ from those other members last started with: "+
			"each member authenticates the requests it serves, forwarded ones included, so a client of this node "+
			"will be refused (401) for the partitions those members lead; start every member with the same keys",
			"members", strings.Join(differ, ", "))
	}
	return nil
}
