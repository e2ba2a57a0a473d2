package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// The gid is the TypeScript resource's (src/participant/postgres-gid.ts),
// byte for byte, and so is the marker table, so a TypeScript, a Python and a
// Go participant of the same id, and the operator's tools, read each other's
// prepared transactions:
//
//	verdict:<cluster id>:<participant id>:<txn id>
//
// each part percent-encoded outside [A-Za-z0-9._-], the prefix hashed when
// longer than 100 bytes and the txn id hashed when the gid would pass 199.
const (
	GIDBytesMax    = 199
	PrefixBytesMax = 100
)

var (
	gidPattern = regexp.MustCompile(`^verdict:[A-Za-z0-9._%#-]+:([A-Za-z0-9._%-]+:)?[A-Za-z0-9._%#-]+$`)
	keepAll    = regexp.MustCompile(`^[A-Za-z0-9._-]*$`)
)

func keep(b byte) bool {
	return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '.' || b == '_' || b == '-'
}

// EncodePart percent-encodes every UTF-8 byte outside [A-Za-z0-9._-] (upper-case hex).
func EncodePart(s string) string {
	if keepAll.MatchString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if keep(s[i]) {
			b.WriteByte(s[i])
		} else {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
	}
	return b.String()
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// GIDPrefix is the prefix of every gid of one participant of one cluster.
func GIDPrefix(clusterID, participantID string) string {
	readable := "verdict:" + EncodePart(clusterID) + ":" + EncodePart(participantID) + ":"
	if len(readable) <= PrefixBytesMax {
		return readable
	}
	return "verdict:#" + sha256Hex(clusterID + "\x00" + participantID)[:32] + ":"
}

// GIDOf is the gid of txnID under prefix.
func GIDOf(prefix, txnID string) string {
	readable := prefix + EncodePart(txnID)
	if len(readable) <= GIDBytesMax {
		return readable
	}
	return prefix + "#" + sha256Hex(txnID)[:40]
}

// ParseGID is the txn id a readable gid of this prefix names; "" for a hashed or foreign gid.
func ParseGID(prefix, gid string) string {
	if !strings.HasPrefix(gid, prefix) {
		return ""
	}
	rest := gid[len(prefix):]
	if rest == "" || rest[0] == '#' {
		return ""
	}
	txnID, err := url.PathUnescape(rest)
	if err != nil || txnID == "" || GIDOf(prefix, txnID) != gid || !gidPattern.MatchString(gid) {
		return ""
	}
	return txnID
}
