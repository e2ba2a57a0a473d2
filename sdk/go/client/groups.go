package client

// Decision groups: which Raft group decides a transaction, a saga or a lease
// (docs/architecture.md, "Decision groups"). The same function as the
// cluster's (src/domain/group.ts): 32-bit FNV-1a over the id's UTF-8 bytes,
// finished with MurmurHash3's fmix32, mapped to [0, groups) by
// multiply-shift. At one group every id is in group 0. groups_test.go pins
// the vectors of docs/architecture.md, so it can never drift from the
// cluster's.

import (
	"fmt"
	"strconv"
)

// GroupsMax is the most decision groups a cluster may have.
const GroupsMax = 64

// GroupKey is the metadata key by which a node that refused NOT_LEADER names the group the request belongs to.
const GroupKey = "verdict-group"

// PlacementHash is the 32-bit placement hash of id (FNV-1a, then fmix32).
func PlacementHash(id string) uint32 {
	h := uint32(0x811c9dc5)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 0x01000193
	}
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// GroupOf is the group (0..groups-1) that decides id: a transaction id, a
// saga id or a lease name. A count outside 1..GroupsMax is the caller's bug
// (the count is checked where it enters) and panics.
func GroupOf(id string, groups int) int {
	if groups < 1 || groups > GroupsMax {
		panic(fmt.Sprintf("GroupOf: the number of decision groups must be a whole number from 1 to %d (got %d)", GroupsMax, groups))
	}
	if groups == 1 {
		return 0
	}
	return int((uint64(PlacementHash(id)) * uint64(groups)) >> 32)
}

// parseGroup is a verdict-group metadata value as a group number, or -1 when it is not one.
func parseGroup(text string) int {
	if text == "" || len(text) > 2 {
		return -1
	}
	g, err := strconv.Atoi(text)
	if err != nil || g < 0 {
		return -1
	}
	return g
}
