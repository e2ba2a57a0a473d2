package client

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"
)

// The id rules of the cluster (src/domain/txn-id.ts), checked before any RPC.
var (
	TxnIDPattern         = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)
	ParticipantIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// CheckTxnID refuses what is not a transaction id: 1-128 of [A-Za-z0-9_.:-], starting with a letter or digit.
func CheckTxnID(txnID string) error {
	if TxnIDPattern.MatchString(txnID) {
		return nil
	}
	shown := txnID
	if len(shown) > 40 {
		shown = fmt.Sprintf("%s... (%d characters)", shown[:40], len(txnID))
	}
	return invalidArgument(`transaction id %q must be 1-128 characters of letters, digits, "_", ".", ":" or "-", starting with a letter or a digit`, shown)
}

// CheckParticipantID refuses what is not a participant id: 1-64 of [A-Za-z0-9_.-], starting with a letter or digit.
func CheckParticipantID(participantID string) error {
	if ParticipantIDPattern.MatchString(participantID) {
		return nil
	}
	shown := participantID
	if len(shown) > 64 {
		shown = shown[:64] + "..."
	}
	return invalidArgument(`participant id %q must be 1-64 characters of letters, digits, "_", "." or "-", starting with a letter or a digit`, shown)
}

// NewTxnIDAt is a UUIDv7 for nowMs from 10 random bytes, as the TypeScript SDK makes them.
func NewTxnIDAt(nowMs int64, random [10]byte) string {
	var b [16]byte
	for i := 0; i < 6; i++ {
		b[i] = byte(nowMs >> (8 * (5 - i)))
	}
	copy(b[6:], random[:])
	b[6] = 0x70 | (b[6] & 0x0f)
	b[8] = 0x80 | (b[8] & 0x3f)
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// NewTxnID is a new timed id (a UUIDv7), which carries its creation time so the cluster can prove it new.
func NewTxnID() string {
	var r [10]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic("verdict: no randomness for a transaction id: " + err.Error())
	}
	return NewTxnIDAt(time.Now().UnixMilli(), r)
}
